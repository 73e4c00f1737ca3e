/**
 * Where a tool's binary is: the path a configuration gives, or the name found on PATH.
 * @module
 */
import { platform } from "../../platform/mod.ts";
import { TESTED_VERSIONS } from "./tested_versions.ts";

/** How a missing tool is installed, for the four tools svc is tested with. */
function installHint(command: string): string {
  if (!Object.hasOwn(TESTED_VERSIONS, command)) return "";
  const tool = TESTED_VERSIONS[command as keyof typeof TESTED_VERSIONS];
  return tool ? ` (install it with: npm install -g ${tool.package}@${tool.version})` : "";
}

/** Where a command is: a path as given, or found on PATH; else why not. */
export type Located = { ok: true; path: string } | { ok: false; reason: string };

/** Finds `command` (a path when it holds a `/`, else a name looked up on PATH) without running it. */
export async function locate(command: string): Promise<Located> {
  if (command.includes("/")) {
    try {
      const info = await platform().stat(command);
      return info.isFile ? { ok: true, path: command } : {
        ok: false,
        reason: `${command} is not a file`,
      };
    } catch {
      return { ok: false, reason: `${command} does not exist` };
    }
  }
  const found = platform().which(command);
  return found
    ? { ok: true, path: found }
    : { ok: false, reason: `${command} not found on PATH${installHint(command)}` };
}
