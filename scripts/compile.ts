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

/** Compiles svc; resolves to the exit status of `deno compile`. */
export async function compileSvc(output: string = DEFAULT_OUTPUT): Promise<number> {
  const status = await new Deno.Command(Deno.execPath(), {
    args: compileArgs(output),
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  if (!status.success && denortAvailable() === undefined) {
    console.error(
      `compile: deno compile needs denort ${Deno.version.deno} for ${Deno.build.target}: ` +
        "it downloads it unless DENORT_BIN names one; set DENORT_BIN on machines without that access",
    );
  }
  return status.code;
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--output");
  const output = at >= 0 ? Deno.args[at + 1] : DEFAULT_OUTPUT;
  if (!output) {
    console.error("compile: --output needs a path");
    Deno.exit(2);
  }
  Deno.exit(await compileSvc(output));
}
