/**
 * What `svc workflow run` reads from the command line before a run exists: the script (a file,
 * `-` for standard input), `--args` (JSON, else a plain string, or `@file`) and `--workdir`.
 * Every problem is a {@linkcode UsageError} that names what is wrong.
 * @module
 */
import { joinPath, platform } from "../src/platform/mod.ts";
import { jsonProblem, type JsonValue } from "../src/schemas/mod.ts";

/** A problem with what the user typed: printed as is, exit status 2. */
export class UsageError extends Error {}

/** Largest script, or `--args @file`, the command line reads (as the run request accepts). */
export const MAX_INPUT_BYTES = 1024 * 1024;

/** A script as the command line found it. */
export interface ScriptSource {
  script: string;
  /** The file's name, for messages and stack traces. */
  filename: string;
  /** The real directory of the file, for references relative to it; absent for standard input. */
  dir?: string;
  /** How the user named it (a path, or `-`). */
  ref: string;
}

/** The reason a file cannot be read, for people. */
function unreadable(what: string, path: string, error: unknown): UsageError {
  const grant = platform().missingGrant(error);
  const name = error instanceof Error ? error.name : "";
  const reason = grant !== undefined
    ? `svc may not read it (it needs ${grant})`
    : name === "NotFound"
    ? "no such file"
    : name === "PermissionDenied"
    ? "permission denied"
    : "it cannot be read";
  return new UsageError(`Cannot read ${what} '${path}': ${reason}`);
}

/** Reads a text file of at most {@linkcode MAX_INPUT_BYTES}; `what` names it in errors. */
async function readInputFile(what: string, path: string): Promise<string> {
  const p = platform();
  let info;
  try {
    info = await p.stat(path);
  } catch (error) {
    throw unreadable(what, path, error);
  }
  if (info.isDirectory) throw new UsageError(`Cannot read ${what} '${path}': it is a directory`);
  if (info.size > MAX_INPUT_BYTES) {
    throw new UsageError(
      `Cannot read ${what} '${path}': it is larger than ${MAX_INPUT_BYTES} bytes`,
    );
  }
  try {
    return await p.readTextFile(path);
  } catch (error) {
    throw unreadable(what, path, error);
  }
}

function dirname(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut <= 0 ? (cut === 0 ? "/" : ".") : path.slice(0, cut);
}

function basename(path: string): string {
  return path.split("/").filter(Boolean).at(-1) ?? path;
}

/** Reads the script named on the command line: a file, or standard input for `-`. */
export async function readScriptSource(ref: string): Promise<ScriptSource> {
  const p = platform();
  if (ref === "-") {
    let bytes: Uint8Array;
    try {
      bytes = await p.readStdin(MAX_INPUT_BYTES);
    } catch (error) {
      if (error instanceof RangeError) {
        throw new UsageError(
          `Cannot read the script from standard input: it is larger than ${MAX_INPUT_BYTES} bytes`,
        );
      }
      throw error;
    }
    const script = new TextDecoder().decode(bytes);
    if (script.trim() === "") {
      throw new UsageError("Cannot read the script from standard input: it is empty");
    }
    return { script, filename: "stdin.js", ref };
  }
  const script = await readInputFile("script", ref);
  const dir = await p.realPath(dirname(ref)).catch(() => undefined);
  return { script, filename: basename(ref), ref, ...(dir !== undefined ? { dir } : {}) };
}

/** What `--args` gave the script, and whether it was taken as a plain string. */
export interface ParsedArgs {
  value: JsonValue | undefined;
  /** True when the text was not JSON and the script gets it as a string (said on stderr). */
  asString: boolean;
}

function argsFromText(text: string, source: string): ParsedArgs {
  let value: JsonValue;
  try {
    value = JSON.parse(text);
  } catch {
    // As Claude Code passes `/name some text`: what is not JSON is the text itself.
    return { value: text, asString: true };
  }
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new UsageError(`Cannot use ${source}: it ${problem}`);
  return { value, asString: false };
}

/**
 * `--args`: JSON, or (when it is not JSON) the text as a plain string; `@path` reads the file
 * (the same rule for its text). A string that starts with `@` is written as JSON: `'"@x"'`.
 */
export async function parseArgsOption(raw: string | undefined): Promise<ParsedArgs> {
  if (raw === undefined) return { value: undefined, asString: false };
  if (raw.startsWith("@") && raw.length > 1) {
    const path = raw.slice(1);
    return argsFromText(await readInputFile("--args file", path), `--args ${raw}`);
  }
  return argsFromText(raw, "--args");
}

/** `--workdir`: an existing directory, as an absolute path with links resolved. */
export async function workdirOption(raw: string | undefined): Promise<string | undefined> {
  if (raw === undefined) return undefined;
  const p = platform();
  const absolute = raw.startsWith("/") ? raw : joinPath(p.cwd(), raw);
  const info = await p.stat(absolute).catch(() => undefined);
  if (!info) throw new UsageError(`Cannot use --workdir '${raw}': no such directory`);
  if (!info.isDirectory) {
    throw new UsageError(`Cannot use --workdir '${raw}': it is not a directory`);
  }
  return await p.realPath(absolute);
}
