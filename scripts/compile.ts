/**
 * `deno task compile [--output <path>]`: compiles svc into one executable (default `dist/svc`)
 * with `deno compile`: the same commands as `cli/main.ts`, the guest bootstrap and the bundled
 * workflows and the board page embedded (`--include guest/ --include bundled/ --include page/`),
 * and the grants of {@linkcode COMPILED_PERMISSION_FLAGS} baked in.
 *
 * `deno compile` needs the runtime stub `denort` of its version: it downloads it unless
 * `DENORT_BIN` names one. {@linkcode denortAvailable} tells whether this machine has one
 * without downloading.
 * @module
 */
import { COMPILED_PERMISSION_FLAGS } from "../cli/permissions.ts";
import { runTask } from "./task_failure.ts";

const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
/** Where `deno task compile` writes the binary unless told otherwise. */
export const DEFAULT_OUTPUT = `${ROOT}/dist/svc`;

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Where a `denort` for this Deno can be had without a download: `DENORT_BIN`, or the zip a
 * previous `deno compile` left in Deno's cache. Undefined when neither exists.
 */
export function denortAvailable(): string | undefined {
  const explicit = Deno.env.get("DENORT_BIN");
  if (explicit) return exists(explicit) ? explicit : undefined;
  const home = Deno.env.get("HOME");
  const denoDir = Deno.env.get("DENO_DIR") || (home ? `${home}/.cache/deno` : undefined);
  if (!denoDir) return undefined;
  const cached = `${denoDir}/dl/release/v${Deno.version.deno}/denort-${Deno.build.target}.zip`;
  return exists(cached) ? cached : undefined;
}

/** The `deno compile` arguments that build svc into `output`. */
export function compileArgs(output: string): string[] {
  return [
    "compile",
    "--no-prompt",
    ...COMPILED_PERMISSION_FLAGS,
    // The checkout leaves node_modules to each command (deno.json); compiling installs its own.
    "--node-modules-dir=auto",
    "--config",
    `${ROOT}/deno.json`,
    "--include",
    `${ROOT}/guest/`,
    "--include",
    `${ROOT}/bundled/`,
    "--include",
    `${ROOT}/page/`,
    "--output",
    output,
    `${ROOT}/cli/main.ts`,
  ];
}

/**
 * The task's own message when `deno compile` failed for want of `denort`: it had none at hand and
 * its download failed (`output` is what `deno compile` printed). Undefined for any other failure,
 * whose output is shown as it came.
 */
export function denortMissingMessage(output: string): string | undefined {
  if (denortAvailable() !== undefined) return undefined;
  if (!/denort|dl\.deno\.land|download/i.test(output)) return undefined;
  return `compile: cannot compile svc: deno compile needs denort ${Deno.version.deno} for ` +
    `${Deno.build.target} and could not download it (offline?); set DENORT_BIN to a denort ` +
    "binary of that version (a release's denort-<target>.zip, unpacked), or run the task once " +
    "where the download works";
}

async function writeAll(to: { write(p: Uint8Array): Promise<number> }, bytes: Uint8Array) {
  for (let done = 0; done < bytes.length;) done += await to.write(bytes.subarray(done));
}

/**
 * Compiles svc; resolves to the exit status of `deno compile`. Its output is held until it ends:
 * a failed `denort` download is a stack trace there, replaced by one line that says what to do.
 */
export async function compileSvc(output: string = DEFAULT_OUTPUT): Promise<number> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: compileArgs(output),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(result.stderr);
  const message = result.success ? undefined : denortMissingMessage(text);
  if (message !== undefined) {
    console.error(message);
    return 1;
  }
  await writeAll(Deno.stdout, result.stdout);
  await writeAll(Deno.stderr, result.stderr);
  return result.code;
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--output");
  const output = at >= 0 ? Deno.args[at + 1] : DEFAULT_OUTPUT;
  if (!output) {
    console.error("compile: --output needs a path");
    Deno.exit(2);
  }
  await runTask("compile svc", () => compileSvc(output));
}
