/**
 * The shared runner of the harness providers: it checks every script-derived value that reaches
 * a command line, starts a coding agent's command line in a process group of its own, with an
 * allow-listed environment, in the call's directory or a fresh scratch one, writes the prompt to
 * its standard input and closes it, reads its output through a bounded line reader, enforces the
 * call's abort signal and a timeout (both kill the whole group), and turns every way a run can
 * end into a result or an `SvcError` that names the provider and holds no secrets. Each tool
 * only says how to build its command line and how to read its output.
 * @module
 */
import { svcHome } from "../../config/mod.ts";
import { SvcError } from "../../errors/mod.ts";
import { type ChildProcess, type ExitStatus, joinPath, platform } from "../../platform/mod.ts";
import type { Effort, SandboxLevel } from "../../schemas/mod.ts";
import { readLines } from "../../streams/mod.ts";
import { isSecretName, redactSecrets } from "../redaction.ts";
import { type ProgressChannel, progressChannel } from "../progress.ts";
import {
  type Availability,
  type DispatchRequest,
  type DispatchResult,
  type Provider,
  SpentFailure,
  type Usage,
} from "../types.ts";
import { checkArgText, checkArgValue } from "./arg_values.ts";
import { harnessEnv } from "./harness_env.ts";
import { locate } from "./locate.ts";
import { TOOL_PROBES, type ToolProbe, type VersionOutcome } from "./probe_cache.ts";
import { stripTerminalCodes } from "./terminal_codes.ts";
import { workingDir } from "./scratch.ts";
import { describeNarrowing, type Narrowing } from "./narrowing.ts";
import type { ModelAliases } from "../model_aliases.ts";

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
  /** Arguments added to every call's command line, after svc's own flags. */
  extraArgs?: string[];
  /**
   * Host variables passed to the tool beside the base set (PATH, HOME, locale, terminal,
   * proxies): the tool's own key variables by default ({@linkcode HARNESS_KEY_ENV}).
   */
  passEnv?: readonly string[];
  /** Fixed variables set for the tool (they win over passed ones and over the tool's defaults). */
  env?: Readonly<Record<string, string>>;
  /**
   * The model endpoint the tool talks to (a gateway, a local server); each tool maps it onto its
   * own variables or settings. The tool's own default endpoint when absent.
   */
  baseUrl?: string;
  /**
   * Claude model aliases the tool serves, as the model names it passes (opencode:
   * `anthropic/claude-sonnet-4-5`); they add to, or replace, the tool's own.
   */
  modelAliases?: ModelAliases;
  /**
   * Where calls without a working directory get a fresh `call-*` directory (removed after the
   * call); `$SVC_HOME/tmp` by default.
   */
  scratchRoot?: string;
  /**
   * Where the turns of a session without a working directory share a kept directory (a tool
   * finds its session by the directory it ran in); `$SVC_HOME/session_dirs` by default.
   */
  sessionRoot?: string;
  /** Longest the tool may take to print its version; {@linkcode PROBE_TIMEOUT_MS} by default. */
  probeTimeoutMs?: number;
  /**
   * Where svc keeps the files it writes for a tool (a settings file that maps the base URL),
   * one directory per provider name; `$SVC_HOME/harness` by default.
   */
  stateRoot?: string;
}

/** One call as a tool's command line sees it, defaults applied. */
export interface HarnessCall {
  /** The name the provider is registered under, for messages. */
  provider: string;
  /**
   * The prompt, with the JSON instruction appended for schema calls, and the system prompt
   * before it for a tool that takes none of its own.
   */
  prompt: string;
  /** The system prompt, for a tool that takes it natively ({@linkcode HarnessTool.systemPrompt}). */
  system?: string;
  model?: string;
  /** The call's effort; each tool maps it onto its own setting (or ignores it). */
  effort?: Effort;
  sandbox: SandboxLevel;
  /** The tool's own session id to continue. */
  resumeSession?: string;
  /** The call's narrowing options: each tool enforces them, or refuses the call (`narrowing`). */
  narrowing?: Narrowing;
  /** The model endpoint the configuration names, for the tool to map onto its own settings. */
  baseUrl?: string;
  /**
   * The provider's own directory under the state root, for files svc writes for the tool (set
   * for every call the runner makes).
   */
  stateDir?: string;
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
  /** What a failed run is known to have used (tokens and any reported cost), to be paid for. */
  spent?: { usage: Usage; cost_usd: number | null };
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
  /** The tool's own key variables, passed from the host unless the options name others. */
  keyEnv: readonly string[];
  /** Claude model aliases the tool understands itself (Claude Code: all three, unchanged). */
  modelAliases?: ModelAliases;
  /**
   * The arguments of one call. The prompt is never among them: it goes to standard input (one
   * argument is limited to 128 KiB). Script-derived values are passed as `--option=value`.
   */
  args(call: HarnessCall): string[];
  /**
   * Whether the tool takes a system prompt of its own (`args` then passes `call.system`); the
   * others get it in front of the prompt.
   */
  systemPrompt?: "native";
  /**
   * Variables every call gets unless the configuration's `env` sets them: the switches that turn
   * off the tool's telemetry, update checks and other traffic svc's runs do not need.
   */
  defaultEnv?: Readonly<Record<string, string>>;
  /**
   * Why the tool cannot hold a call's narrowing options (`disallowedTools`, `bashCommandClamp`),
   * or undefined when it holds them. A tool without this refuses every call that has any: an
   * option that narrows the agent is enforced or refused, never dropped.
   */
  narrowing?(call: HarnessCall): string | undefined;
  /** Variables the tool gets for one call (its sandbox settings); they win over every other. */
  env?(call: HarnessCall): Record<string, string> | undefined;
  /**
   * Writes what the tool needs before a call (a settings file under `call.stateDir`) and may
   * add to the call's whole environment `env`, which it sees as configured.
   */
  prepare?(call: HarnessCall, env: Record<string, string>): Promise<void>;
  /**
   * A fresh reader of one call's standard output, made before the process starts; `env` is the
   * process's environment (for a tool whose reading needs its state from before the call).
   * What it parses of the tool's work as it goes (text, tool uses, files, errors) it reports
   * to `progress`, which redacts and bounds it.
   */
  reader(
    call: HarnessCall,
    env: Readonly<Record<string, string>>,
    progress: ProgressChannel,
  ): OutputReader | Promise<OutputReader>;
}

/** Default longest run of one harness call. */
export const DEFAULT_HARNESS_TIMEOUT_MS = 30 * 60_000;
/**
 * Longest a tool may take to print its version. Measured on 2 busy cores with the four tools
 * probed at once: Gemini CLI 0.61 took up to 7.5 s (2.4 to 2.9 s idle), opencode 3.4 s, Codex
 * 0.8 s, Claude Code 0.1 s; this leaves four times the slowest.
 */
export const PROBE_TIMEOUT_MS = 30_000;
/**
 * Longest a call waits for a version probe still running: long enough for a binary that fails
 * at once to be seen as unavailable, short enough that a slow one does not hold calls up (the
 * call then goes ahead, and the probe goes on by itself).
 */
export const PROBE_CALL_WAIT_MS = 1_000;
/** Longest line of a tool's standard output that is read; longer ones count as malformed. */
export const STDOUT_LINE_LIMIT = 16 * 1024 * 1024;
const STDERR_LINE_LIMIT = 16 * 1024;
const STDERR_TAIL = 40;
/** How long the output may stay open after the tool exited (a straggler holding the pipe). */
const DRAIN_GRACE_MS = 2_000;
const DETAIL_LIMIT = 600;

/**
 * Removes what looks like a credential (the provider's key values in any spelling, API keys,
 * bearer tokens, `NAME=value` secrets) from a tool's output before it goes into an error.
 */
export function redact(text: string, secrets: readonly string[] = []): string {
  return redactSecrets(text, { secrets });
}

/**
 * A tool's message as svc repeats it in an error: without terminal escape sequences and control
 * characters (colours would reach run records and terminals), without anything that looks like
 * a credential. Every piece of a tool's own text goes through here before it reaches an error.
 */
export function toolMessage(text: string, secrets: readonly string[] = []): string {
  return redact(stripTerminalCodes(text), secrets);
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

/** How one process run ended. */
type ProcessEnd =
  | { kind: "exited"; status: ExitStatus; stderrTail: string[] }
  | { kind: "timeout" }
  | { kind: "aborted"; reason: unknown };

interface ProcessRun {
  path: string;
  args: readonly string[];
  cwd?: string;
  /** The whole environment of the process: nothing is inherited from the host. */
  env: Record<string, string>;
  /** Written to standard input, which is then closed; nothing by default. */
  input?: string;
  signal?: AbortSignal;
  timeoutMs: number;
  onLine(text: string): void;
  onOversize(bytes: number): void;
  /** Called for every line of standard error, a sign of life as much as one of output. */
  onStderrLine?(): void;
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
    clearEnv: true,
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
      run.onStderrLine?.();
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
  end: { status: ExitStatus; stderrTail: readonly string[]; secrets: readonly string[] },
  report: HarnessReport,
): DispatchResult {
  try {
    return answerOf(tool, call, end, report);
  } catch (error) {
    // A failure after tokens were spent is still paid for (budgets count it).
    if (error instanceof SvcError && report.spent && !report.answer) {
      throw new SpentFailure(error.code, error.message, { ...report.spent, cause: error });
    }
    throw error;
  }
}

/** The answer of a finished run, or the error that says why there is none. */
function answerOf(
  tool: HarnessTool,
  call: HarnessCall,
  end: { status: ExitStatus; stderrTail: readonly string[]; secrets: readonly string[] },
  report: HarnessReport,
): DispatchResult {
  const { status, stderrTail } = end;
  const hide = (text: string) => toolMessage(text, end.secrets);
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
      `${tool.tool} reported an error${reported ? `: ${clip(hide(reported))}` : ""}${
        exitedOk ? "" : ` (it ${howItEnded(status)})`
      }`,
    );
  }
  if (!exitedOk) {
    const tail = lastLines(stderrTail.map(hide));
    const detail = reported ? clip(hide(reported)) : tail;
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

/** The call's narrowing options, when it has any. */
function narrowingOf(options: DispatchRequest["options"]): { narrowing?: Narrowing } {
  const disallowedTools = options.disallowedTools ?? [];
  const bashCommandClamp = options.bashCommandClamp ?? [];
  if (disallowedTools.length === 0 && bashCommandClamp.length === 0) return {};
  return { narrowing: { disallowedTools, bashCommandClamp } };
}

/** Refuses, before anything starts, a call whose narrowing options the tool cannot hold. */
function refuseUnheld(tool: HarnessTool, call: HarnessCall): void {
  if (call.narrowing === undefined) return;
  const reason = tool.narrowing?.(call) ??
    (tool.narrowing === undefined ? `${tool.tool} cannot enforce them` : undefined);
  if (reason === undefined) return;
  throw new SvcError(
    "invalid_argument",
    `Cannot dispatch to ${call.provider}: the call restricts its agent (${
      describeNarrowing(call.narrowing)
    }) and ${reason}; refused rather than run without the restriction`,
  );
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

/** Runs `path --version` once (with the base environment) and reads its first line. */
async function runVersion(
  command: string,
  path: string,
  options: { env: Record<string, string>; timeoutMs: number },
): Promise<VersionOutcome> {
  const lines: string[] = [];
  let end: ProcessEnd;
  try {
    end = await runProcess({
      path,
      args: ["--version"],
      env: options.env,
      timeoutMs: options.timeoutMs,
      onLine: (line) => {
        if (lines.length < 20) lines.push(line);
      },
      onOversize: () => {},
    });
  } catch (error) {
    const grant = platform().missingGrant(error);
    return {
      state: "failed",
      reason: grant ? `svc needs ${grant}` : `${command} could not be started`,
    };
  }
  if (end.kind !== "exited") {
    return {
      state: "timed_out",
      reason: `${command} --version did not answer within ${formatDuration(options.timeoutMs)}`,
    };
  }
  if (end.status.code !== 0 || end.status.signal !== null) {
    return { state: "failed", reason: `${command} --version ${howItEnded(end.status)}` };
  }
  const first = lines.map((line) => toolMessage(line).trim()).find((line) => line !== "") ?? "";
  const version = /\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?/.exec(first)?.[0] ?? first;
  return { state: "answered", version, line: clip(first, 200) };
}

/** Options of {@linkcode probeToolVersion}. */
export interface ToolVersionOptions {
  /** Longest wait for a probe still running; until it ends (its own deadline) when absent. */
  waitMs?: number;
  /** Longest the version flag may take; {@linkcode PROBE_TIMEOUT_MS} by default. */
  timeoutMs?: number;
}

/**
 * What is known of a tool's binary: missing, or the outcome of its version flag, run once per
 * binary file and shared by every caller (`probing` while it runs past `waitMs`).
 */
export function probeToolVersion(
  command: string,
  options: ToolVersionOptions = {},
): Promise<ToolProbe> {
  const timeoutMs = options.timeoutMs ?? PROBE_TIMEOUT_MS;
  const env = harnessEnv(command, { pass: [] }).env;
  return TOOL_PROBES.probe(command, {
    run: (path) => runVersion(command, path, { env, timeoutMs }),
    ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
  });
}

/**
 * A tool's availability from its probe. A probe that timed out or still runs does not make the
 * tool unavailable: the binary is there, and a slow version flag says nothing of its calls.
 */
function availabilityOf(probe: ToolProbe): Availability {
  switch (probe.state) {
    case "missing":
    case "failed":
      return { available: false, reason: probe.reason };
    case "probing":
      return {
        available: true,
        reason: `found ${probe.path}; its version is still being probed`,
        pending: true,
      };
    case "timed_out":
      return { available: true, reason: `found ${probe.path}; ${probe.reason}` };
    case "answered":
      return {
        available: true,
        reason: `found ${probe.path}: ${probe.line}`,
        version: probe.version,
      };
  }
}

/** `error` with a note that the tool's version probe timed out, when it did. */
function withProbeNote(error: unknown, timedOut: string | undefined): unknown {
  if (timedOut === undefined || !(error instanceof SvcError)) return error;
  const message = `${error.message} (svc's probe of the tool timed out too: ${timedOut})`;
  if (error instanceof SpentFailure) {
    return new SpentFailure(error.code, message, {
      usage: error.usage,
      cost_usd: error.cost_usd,
      cause: error,
    });
  }
  return new SvcError(error.code, message, { status: error.status, cause: error });
}

/**
 * The values a call's progress is redacted of: the passed key variables' and the configured
 * variables' whose names say secret. Not every configured value, as errors are: a configured
 * `HOME` or `TMPDIR` would blank every path the agent works on.
 */
function progressSecrets(
  env: Readonly<Record<string, string>>,
  pass: readonly string[],
  fixed: Readonly<Record<string, string>>,
): string[] {
  const named = Object.entries(fixed).filter(([name]) => isSecretName(name));
  return [...pass.map((name) => env[name]), ...named.map(([, value]) => value)]
    .filter((value): value is string => value !== undefined);
}

/**
 * Builds a provider that drives `tool`'s command line: one process per call, in its own process
 * group, with an allow-listed environment (never the host's whole one), in the call's working
 * directory or a fresh scratch directory, the prompt on standard input.
 */
export function createHarnessProvider(tool: HarnessTool, options: HarnessOptions = {}): Provider {
  const name = options.name ?? tool.tool;
  const command = options.command ?? tool.tool;
  const timeoutMs = options.timeoutMs ?? DEFAULT_HARNESS_TIMEOUT_MS;
  const extraArgs = [...(options.extraArgs ?? [])];
  const pass = [...(options.passEnv ?? tool.keyEnv)];
  const fixed = { ...options.env };
  const aliases = { ...tool.modelAliases, ...options.modelAliases };
  return {
    name,
    kind: "harness",
    ...(Object.keys(aliases).length > 0 ? { modelAliases: aliases } : {}),
    probe: async (probeOptions) =>
      availabilityOf(
        await probeToolVersion(command, {
          ...(options.probeTimeoutMs !== undefined ? { timeoutMs: options.probeTimeoutMs } : {}),
          ...(probeOptions?.wait === false ? { waitMs: PROBE_CALL_WAIT_MS } : {}),
        }),
      ),
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      request.signal.throwIfAborted();
      const model = request.model ?? request.options.model ?? options.model;
      // Every value that reaches the command line from the request, checked in one place.
      if (model !== undefined) checkArgValue(name, "model", model);
      if (request.resumeSession !== undefined) {
        checkArgValue(name, "session id", request.resumeSession);
      }
      const native = tool.systemPrompt === "native" && request.system !== undefined;
      if (native) checkArgText(name, "system prompt", request.system!);
      const prompt = harnessPrompt(request);
      const call: HarnessCall = {
        provider: name,
        prompt: request.system !== undefined && !native ? `${request.system}\n\n${prompt}` : prompt,
        ...(native ? { system: request.system } : {}),
        ...(model !== undefined ? { model } : {}),
        ...(request.options.effort !== undefined ? { effort: request.options.effort } : {}),
        sandbox: request.sandbox ?? "read-only",
        ...(request.resumeSession !== undefined ? { resumeSession: request.resumeSession } : {}),
        ...narrowingOf(request.options),
        ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
        stateDir: joinPath(options.stateRoot ?? joinPath(svcHome(), "harness"), name),
        extraArgs,
      };
      refuseUnheld(tool, call);
      const found = await locate(command);
      if (!found.ok) throw failure(name, found.reason);
      const { env, secrets } = harnessEnv(name, { pass, fixed, defaults: tool.defaultEnv });
      Object.assign(env, tool.env?.(call));
      await tool.prepare?.(call, env);
      const dir = await workingDir(name, {
        ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
        ...(request.cwdRoot !== undefined ? { cwdRoot: request.cwdRoot } : {}),
        ...(request.options.session !== undefined ? { session: request.options.session } : {}),
        root: options.scratchRoot ?? joinPath(svcHome(), "tmp"),
        sessionRoot: options.sessionRoot ?? joinPath(svcHome(), "session_dirs"),
      });
      const progress = progressChannel(request.onProgress, {
        secrets: progressSecrets(env, pass, fixed),
        ...(request.onToolsRunning ? { onToolsRunning: request.onToolsRunning } : {}),
      });
      try {
        const reader = await tool.reader(call, env, progress);
        // Lines over the limit, and lines the reader choked on: malformed either way.
        let oversize = 0;
        let end: ProcessEnd;
        try {
          end = await runProcess({
            path: found.path,
            args: tool.args(call),
            cwd: dir.path,
            env,
            input: call.prompt,
            signal: request.signal,
            timeoutMs,
            onLine: (line) => {
              request.onActivity?.();
              try {
                reader.line(line);
              } catch {
                oversize++;
              }
            },
            onOversize: () => {
              request.onActivity?.();
              oversize++;
            },
            onStderrLine: () => request.onActivity?.(),
          });
        } catch (error) {
          throw spawnFailure(name, found.path, error);
        } finally {
          progress.flush();
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
        return conclude(tool, call, { ...end, secrets }, report);
      } catch (error) {
        if (request.signal.aborted) throw error;
        throw withProbeNote(error, await TOOL_PROBES.timedOut(found.path));
      } finally {
        await dir.release();
      }
    },
  };
}
