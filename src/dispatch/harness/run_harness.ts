/**
 * The shared runner of the harness providers: it starts a coding agent's command line in a
 * process group of its own with standard input closed, reads its output through a bounded line
 * reader, enforces the call's abort signal and a timeout (both kill the whole group), and turns
 * every way a run can end into a result or an `SvcError` that names the provider and holds no
 * secrets. Each tool only says how to build its command line and how to read its output.
 * @module
 */
import { SvcError } from "../../errors/mod.ts";
import { type ChildProcess, type ExitStatus, platform } from "../../platform/mod.ts";
import type { SandboxLevel } from "../../schemas/mod.ts";
import { readLines } from "../../streams/mod.ts";
import type { Availability, DispatchRequest, DispatchResult, Provider, Usage } from "../types.ts";

/** Options of every harness provider factory. */
export interface HarnessOptions {
  /** Name the provider registers under; the tool's name (`claude`, `codex`, ...) by default. */
  name?: string;
  /** The binary: a name looked up on PATH or a path to it; the tool's name by default. */
  command?: string;
  /** Model of calls that name none; the tool's own default when absent. */
  model?: string;
  /** Longest a call may run before its whole process group is killed; 30 minutes by default. */
  timeoutMs?: number;
  /** Arguments added to every call's command line, after svc's own flags, before the prompt. */
  extraArgs?: string[];
}

/** One call as a tool's command line sees it, defaults applied. */
export interface HarnessCall {
  /** The name the provider is registered under, for messages. */
  provider: string;
  /** The prompt, with the JSON instruction appended for schema calls. */
  prompt: string;
  model?: string;
  sandbox: SandboxLevel;
  /** The tool's own session id to continue. */
  resumeSession?: string;
  extraArgs: readonly string[];
}

/** The answer of a run that finished properly. */
export interface HarnessAnswer {
  output: string;
  usage: Usage;
  cost_usd: number | null;
  model: string | null;
  session_id: string | null;
}

/** What a run's output said, once the process ended. */
export interface HarnessReport {
  /** The final answer, when one arrived. */
  answer?: HarnessAnswer;
  /** Whether the tool itself said the call failed (an error result, a failed turn). */
  failed: boolean;
  /** Error messages the tool wrote in its output, oldest first. */
  errors: string[];
  /** Lines that could not be read: not JSON, or over the line limit. */
  malformed: number;
}

/** Reads one run's standard output. */
export interface OutputReader {
  /** One line of standard output (without its newline). */
  line(text: string): void;
  /** Called once the process ended, with the last lines of its standard error. */
  finish(stderrTail: readonly string[]): HarnessReport;
}

/** How svc drives one coding-agent command line: the only part that differs between tools. */
export interface HarnessTool {
  /** The tool's name: the default provider name and binary. */
  tool: string;
  /** What to do when the tool is not authenticated, quoted in the error. */
  authHint: string;
  /** Recognises the tool's authentication failures in what it wrote. */
  authPattern: RegExp;
  /** Exit codes by which the tool reports an authentication failure. */
  authExitCodes?: readonly number[];
  /** The arguments of one call. */
  args(call: HarnessCall): string[];
  /** Variables added to the inherited environment for one call. */
  env?(call: HarnessCall): Record<string, string> | undefined;
  /**
   * Text written to the tool's standard input before it is closed, for a tool that cannot take
   * the prompt on its command line unchanged. Without it, standard input is closed at once.
   */
  stdin?(call: HarnessCall): string | undefined;
  /** A fresh reader of one call's standard output. */
  reader(call: HarnessCall): OutputReader;
}

/** Default longest run of one harness call. */
export const DEFAULT_HARNESS_TIMEOUT_MS = 30 * 60_000;
const PROBE_TIMEOUT_MS = 10_000;
/** Longest line of a tool's standard output that is read; longer ones count as malformed. */
export const STDOUT_LINE_LIMIT = 16 * 1024 * 1024;
const STDERR_LINE_LIMIT = 16 * 1024;
const STDERR_TAIL = 40;
/** How long the output may stay open after the tool exited (a straggler holding the pipe). */
const DRAIN_GRACE_MS = 2_000;
const DETAIL_LIMIT = 600;

const SECRET_PATTERNS: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
const NAMED_SECRET =
  /\b(api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password)(["']?\s*[:=]\s*["']?)[^\s"',;]{8,}/gi;

/**
 * Removes what looks like a credential (API keys, bearer tokens, `key=value` secrets) from a
 * tool's output before it goes into an error message.
 */
export function redact(text: string): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, "[redacted]");
  out = out.replace(BEARER, (_all, scheme: string) => `${scheme} [redacted]`);
  return out.replace(NAMED_SECRET, (_all, name: string, sep: string) => `${name}${sep}[redacted]`);
}

function clip(text: string, limit = DETAIL_LIMIT): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

/** A duration for people: `500 ms`, `12 s`, `30 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Number((ms / 1000).toFixed(1))} s`;
  return `${Number((ms / 60_000).toFixed(1))} min`;
}

/**
 * The prompt a tool receives: the call's, and for a schema call an instruction to answer with
 * JSON only (the engine validates the answer and retries).
 */
export function harnessPrompt(request: DispatchRequest): string {
  const schema = request.options.schema;
  if (schema === undefined) return request.prompt;
  return `${request.prompt}\n\nAnswer with a single JSON value that is valid against this JSON Schema, and nothing else (no prose, no code fence):\n${
    JSON.stringify(schema)
  }`;
}

function failure(provider: string, detail: string, cause?: unknown): SvcError {
  return new SvcError("provider_failed", `Cannot dispatch to ${provider}: ${detail}`, { cause });
}

/** Stack trace lines (a JavaScript `at ...` frame, a Rust `12: <unknown>` frame, the header). */
const STACK_LINE = /^\s+at\s|^\s*\d+:\s|^\s*stack backtrace:\s*$/i;

/** The last meaningful lines of stderr, on one line: blank lines and stack traces left out. */
function lastLines(lines: readonly string[], n = 5): string {
  return lines.filter((line) => line.trim() !== "" && !STACK_LINE.test(line)).slice(-n)
    .map((line) => clip(line, 300)).join(" | ");
}

/** Where a command is: a path as given, or found on PATH. */
type Located = { ok: true; path: string } | { ok: false; reason: string };

async function locate(command: string): Promise<Located> {
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
  return found ? { ok: true, path: found } : { ok: false, reason: `${command} not found on PATH` };
}

/** How one process run ended. */
type ProcessEnd =
  | { kind: "exited"; status: ExitStatus; stderrTail: string[] }
  | { kind: "timeout" }
  | { kind: "aborted"; reason: unknown };

interface ProcessRun {
  path: string;
  args: readonly string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Written to standard input, which is then closed; nothing by default. */
  input?: string;
  signal?: AbortSignal;
  timeoutMs: number;
  onLine(text: string): void;
  onOversize(bytes: number): void;
}

/** Waits for `done`, but at most `ms`; then stops the reads (`io`) and waits for them to end. */
async function drain(done: Promise<unknown>, ms: number, io: AbortController): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), ms)));
  const first = await Promise.race([done.then(() => "done" as const), late]);
  clearTimeout(timer);
  if (first === "late") {
    io.abort();
    await done;
  }
}

/** Starts a process in its own group; throws the spawn error as is. */
function start(run: ProcessRun): ChildProcess {
  return platform().spawn(run.path, {
    args: run.args,
    cwd: run.cwd,
    env: run.env,
    newProcessGroup: true,
  });
}

/** Writes `input` (if any) to a child's standard input, then closes it; never throws. */
function feed(child: ChildProcess, input: string | undefined): void {
  const writer = child.stdin.getWriter();
  const written = input ? writer.write(new TextEncoder().encode(input)) : Promise.resolve();
  // A tool that exits without reading its input breaks the pipe: its status tells the rest.
  written.then(() => writer.close()).catch(() => {});
}

/**
 * Runs one process to its end, its timeout or its abort. Standard input gets `input` and is
 * closed (at once when there is none); stdout lines go to `onLine`; the last stderr lines are kept. On timeout or abort the whole
 * process group is killed, and in every case the process is reaped and its pipes closed before
 * this resolves.
 */
async function runProcess(run: ProcessRun): Promise<ProcessEnd> {
  if (run.signal?.aborted) return { kind: "aborted", reason: run.signal.reason };
  const child = start(run);
  feed(child, run.input);
  const io = new AbortController();
  const stderrTail: string[] = [];
  const stdoutDone = (async () => {
    const stream = child.stdout.pipeThrough(new TransformStream(), { signal: io.signal });
    for await (const line of readLines(stream, STDOUT_LINE_LIMIT)) {
      if (line.kind === "line") run.onLine(line.text);
      else run.onOversize(line.bytes);
    }
  })().catch(() => {});
  const stderrDone = (async () => {
    const stream = child.stderr.pipeThrough(new TransformStream(), { signal: io.signal });
    for await (const line of readLines(stream, STDERR_LINE_LIMIT)) {
      stderrTail.push(line.kind === "line" ? line.text : `[${line.bytes} bytes: line too long]`);
      if (stderrTail.length > STDERR_TAIL) stderrTail.shift();
    }
  })().catch(() => {});
  const reads = Promise.all([stdoutDone, stderrDone]);

  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const interrupted = new Promise<ProcessEnd>((resolve) => {
    timer = setTimeout(() => resolve({ kind: "timeout" }), run.timeoutMs);
    const signal = run.signal;
    if (signal) {
      onAbort = () => resolve({ kind: "aborted", reason: signal.reason });
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  const exited = child.status.then(async (status): Promise<ProcessEnd> => {
    await drain(reads, DRAIN_GRACE_MS, io);
    return { kind: "exited", status, stderrTail };
  });
  try {
    return await Promise.race([exited, interrupted]);
  } finally {
    clearTimeout(timer);
    if (onAbort) run.signal?.removeEventListener("abort", onAbort);
    // The whole group: the tool and whatever it started (a no-op once it has exited).
    child.kill("SIGKILL");
    await child.status;
    await drain(reads, DRAIN_GRACE_MS, io);
  }
}

/** Describes how a process ended, for people: `exited with code 2`, `was killed by SIGSEGV`. */
function howItEnded(status: ExitStatus): string {
  return status.signal ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
}

function conclude(
  tool: HarnessTool,
  call: HarnessCall,
  status: ExitStatus,
  stderrTail: readonly string[],
  report: HarnessReport,
): DispatchResult {
  const exitedOk = status.code === 0 && status.signal === null;
  const name = call.provider;
  if (!exitedOk || report.failed) {
    const said = [...report.errors, ...stderrTail];
    const authExit = status.signal === null && (tool.authExitCodes ?? []).includes(status.code);
    if (authExit || said.some((line) => tool.authPattern.test(line))) {
      throw new SvcError(
        "provider_unauthenticated",
        `Cannot dispatch to ${name}: not authenticated (${tool.authHint})`,
      );
    }
  }
  const reported = report.errors.filter((e) => e.trim() !== "").at(-1);
  if (report.failed) {
    throw failure(
      name,
      `${tool.tool} reported an error${reported ? `: ${clip(redact(reported))}` : ""}${
        exitedOk ? "" : ` (it ${howItEnded(status)})`
      }`,
    );
  }
  if (!exitedOk) {
    const tail = lastLines(stderrTail.map(redact));
    const detail = reported ? clip(redact(reported)) : tail;
    throw failure(
      name,
      `${tool.tool} ${howItEnded(status)}${
        detail ? `: ${detail}` : " and wrote nothing on stderr"
      }`,
    );
  }
  if (!report.answer) {
    const skipped = report.malformed > 0
      ? ` (${report.malformed} malformed ${report.malformed === 1 ? "line" : "lines"} skipped)`
      : "";
    throw failure(name, `the output of ${tool.tool} was malformed: no final result${skipped}`);
  }
  return { ...report.answer, provider: name };
}

/** Why a spawn failed, for people. */
function spawnFailure(provider: string, path: string, error: unknown): SvcError {
  const grant = platform().missingGrant(error);
  if (grant) return failure(provider, `svc needs ${grant}`, error);
  if (error instanceof Error && error.name === "NotFound") {
    return failure(provider, `${path} does not exist`, error);
  }
  if (error instanceof Error && error.name === "PermissionDenied") {
    return failure(provider, `${path} cannot be executed`, error);
  }
  return failure(provider, `${path} could not be started`, error);
}

/** Checks that the binary exists and answers `--version` in time. */
async function probeTool(command: string): Promise<Availability> {
  const found = await locate(command);
  if (!found.ok) return { available: false, reason: found.reason };
  const lines: string[] = [];
  let end: ProcessEnd;
  try {
    end = await runProcess({
      path: found.path,
      args: ["--version"],
      timeoutMs: PROBE_TIMEOUT_MS,
      onLine: (line) => {
        if (lines.length < 20) lines.push(line);
      },
      onOversize: () => {},
    });
  } catch (error) {
    const grant = platform().missingGrant(error);
    return {
      available: false,
      reason: grant ? `svc needs ${grant}` : `${command} could not be started`,
    };
  }
  if (end.kind !== "exited") {
    return {
      available: false,
      reason: `${command} --version did not answer within ${formatDuration(PROBE_TIMEOUT_MS)}`,
    };
  }
  if (end.status.code !== 0 || end.status.signal !== null) {
    return { available: false, reason: `${command} --version ${howItEnded(end.status)}` };
  }
  const first = lines.map((line) => line.trim()).find((line) => line !== "") ?? "";
  const version = /\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?/.exec(first)?.[0] ?? first;
  return { available: true, reason: `found ${found.path}: ${clip(first, 200)}`, version };
}

/**
 * Builds a provider that drives `tool`'s command line: one process per call, in its own process
 * group, with the host's environment (the tool needs HOME, PATH and its own credentials).
 */
export function createHarnessProvider(tool: HarnessTool, options: HarnessOptions = {}): Provider {
  const name = options.name ?? tool.tool;
  const command = options.command ?? tool.tool;
  const timeoutMs = options.timeoutMs ?? DEFAULT_HARNESS_TIMEOUT_MS;
  const extraArgs = [...(options.extraArgs ?? [])];
  return {
    name,
    kind: "harness",
    probe: () => probeTool(command),
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      request.signal.throwIfAborted();
      const model = request.model ?? request.options.model ?? options.model;
      const call: HarnessCall = {
        provider: name,
        prompt: harnessPrompt(request),
        ...(model !== undefined ? { model } : {}),
        sandbox: request.sandbox ?? "read-only",
        ...(request.resumeSession !== undefined ? { resumeSession: request.resumeSession } : {}),
        extraArgs,
      };
      const found = await locate(command);
      if (!found.ok) throw failure(name, found.reason);
      const reader = tool.reader(call);
      // Lines over the limit, and lines the reader choked on: malformed either way.
      let oversize = 0;
      let end: ProcessEnd;
      try {
        end = await runProcess({
          path: found.path,
          args: tool.args(call),
          ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
          env: tool.env?.(call),
          input: tool.stdin?.(call),
          signal: request.signal,
          timeoutMs,
          onLine: (line) => {
            try {
              reader.line(line);
            } catch {
              oversize++;
            }
          },
          onOversize: () => oversize++,
        });
      } catch (error) {
        throw spawnFailure(name, found.path, error);
      }
      if (end.kind === "aborted") throw end.reason;
      if (end.kind === "timeout") {
        throw new SvcError(
          "provider_timeout",
          `Cannot dispatch to ${name}: ${tool.tool} gave no answer within ${
            formatDuration(timeoutMs)
          } (its processes were killed)`,
        );
      }
      const report = reader.finish(end.stderrTail);
      report.malformed += oversize;
      return conclude(tool, call, end.status, end.stderrTail, report);
    },
  };
}
