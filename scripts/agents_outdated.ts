/**
 * Lists the releases of the four coding-agent command lines that are newer than the versions svc
 * is tested with (src/dispatch/harness/tested_versions.ts), read from the npm registry, so that
 * the next bump starts from one command: `deno task agents:outdated`.
 *
 * Prints one line per tool: its name, the tested version and the newer releases (pre-releases
 * left out), or `current`. The registry is `--registry <url>`, else `npm_config_registry`, else
 * https://registry.npmjs.org. Exit status: 0 every tool is at its latest release, 1 some tool has
 * a newer release, 2 the registry could not be read or answered something unreadable (one line
 * on standard error says which package and why).
 * @module
 */
import { TESTED_VERSIONS } from "../src/dispatch/harness/tested_versions.ts";
import { newerReleases, packageUrl, registryOf } from "./agents_outdated/registry.ts";
import { runTask } from "./task_failure.ts";

/** Exit statuses of the task. */
export const OUTDATED_EXIT = { current: 0, newer: 1, failed: 2 } as const;

/** Bound of one registry answer: package documents of these tools are a few MB. */
const DOCUMENT_LIMIT = 64 * 1024 * 1024;
const TIMEOUT_MS = 30_000;

/** The versions the registry lists for `pkg`. */
async function versionsOf(registry: string, pkg: string): Promise<string[]> {
  const url = packageUrl(registry, pkg);
  let response: Response;
  try {
    response = await fetch(url, {
      // The abbreviated document: versions and dist-tags only.
      headers: { accept: "application/vnd.npm.install-v1+json" },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    throw new Error(`Cannot read ${pkg} from ${registry}: ${(error as Error).message}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`Cannot read ${pkg} from ${registry}: it answered HTTP ${response.status}`);
  }
  const length = Number(response.headers.get("content-length") ?? 0);
  if (length > DOCUMENT_LIMIT) {
    await response.body?.cancel();
    throw new Error(`Cannot read ${pkg} from ${registry}: its document is over 64 MiB`);
  }
  let document: unknown;
  try {
    document = await response.json();
  } catch {
    throw new Error(`Cannot read ${pkg} from ${registry}: its answer is not JSON`);
  }
  const versions = (document as { versions?: unknown } | null)?.versions;
  if (typeof versions !== "object" || versions === null || Array.isArray(versions)) {
    throw new Error(`Cannot read ${pkg} from ${registry}: its document has no versions`);
  }
  return Object.keys(versions);
}

async function main(args: string[]): Promise<number> {
  let registry: string;
  try {
    registry = registryOf(args, Deno.env.get("npm_config_registry"));
  } catch (error) {
    console.error((error as Error).message);
    return OUTDATED_EXIT.failed;
  }
  let outdated = false;
  for (const [tool, { package: pkg, version }] of Object.entries(TESTED_VERSIONS)) {
    let newer: string[];
    try {
      newer = newerReleases(await versionsOf(registry, pkg), version);
    } catch (error) {
      console.error((error as Error).message);
      return OUTDATED_EXIT.failed;
    }
    outdated ||= newer.length > 0;
    console.log(
      `${tool.padEnd(9)}${version.padEnd(10)}${
        newer.length > 0 ? `newer: ${newer.join(", ")}` : "current"
      }`,
    );
  }
  return outdated ? OUTDATED_EXIT.newer : OUTDATED_EXIT.current;
}

if (import.meta.main) await runTask("list newer releases", () => main(Deno.args));
