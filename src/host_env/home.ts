/**
 * Where svc keeps its data and its configuration file.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";

/** The data directory: `SVC_HOME`, else `~/.svc`. */
export function svcHome(): string {
  const p = platform();
  const explicit = p.env("SVC_HOME");
  if (explicit) return explicit;
  const home = p.homeDir();
  if (!home) {
    throw new SvcError(
      "invalid_argument",
      "Cannot locate the data directory: set SVC_HOME or HOME",
    );
  }
  return joinPath(home, ".svc");
}

/**
 * The configuration file: the one `SVC_CONFIG` names (`explicit`: it must exist), else
 * `<home>/config.json` (absent means the embedded default).
 */
export function configFile(home: string): { path: string; explicit: boolean } {
  const named = platform().env("SVC_CONFIG");
  return named
    ? { path: named, explicit: true }
    : { path: joinPath(home, "config.json"), explicit: false };
}
