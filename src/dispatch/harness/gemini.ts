/**
 * Gemini CLI (0.61): `gemini -o json` with the prompt on standard input prints one JSON document
 * (pretty-printed over many lines) with `session_id`, `response` and `stats.models.<model>`
 * (`tokens`, and `roles.<role>`: `main` for the answer, `utility_router` for the model router). A
 * failure prints `{"error": {type, message, code}}` on standard error and exits with the code:
 * an HTTP status of the model API modulo 256 (401 exits 145), 41 for an auth set-up error. An
 * unknown `--resume` exits 42 with plain text.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
import { count, field, isRecord, type JsonRecord, text, tokens } from "./json_fields.ts";
import {
  createHarnessProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessTool,
  type OutputReader,
  STDOUT_LINE_LIMIT,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";
import { ensureGeminiHome } from "./gemini_home.ts";
import { geminiNarrowingProblem, geminiPolicyPaths, writeGeminiPolicies } from "./gemini_policy.ts";
import type { ProgressChannel } from "../progress.ts";

/**
 * Gemini's approval mode of each svc sandbox level. In headless mode whatever would ask for
 * approval is refused, so `default` leaves the model its read-only tools; `auto_edit` approves
 * file edits; `yolo` approves everything. (`--sandbox` is not used: it runs tools in a container
 * and needs Docker or Podman.)
 */
export const GEMINI_APPROVAL: Record<SandboxLevel, string> = {
  "read-only": "default",
  write: "auto_edit",
  full: "yolo",
};

/**
 * The prompt goes to standard input: with standard input not a terminal Gemini runs headless
 * and takes what it reads as the prompt (one argument is limited to 128 KiB). Values from the
 * call are glued to their option (`--resume=<id>`): `--resume` is a string option without
 * `nargs`, for which yargs takes the next argument only when it does not look like an option.
 * `--skip-trust`: a headless run in a folder the user never trusted exits 55, and svc runs the
 * tool in directories it chose (a scratch or session directory, the call's `cwd`).
 */
function geminiArgs(call: HarnessCall): string[] {
  return [
    "--output-format",
    "json",
    "--skip-trust",
    ...(call.model !== undefined ? [`--model=${call.model}`] : []),
    "--approval-mode",
    GEMINI_APPROVAL[call.sandbox],
    ...(call.resumeSession !== undefined ? [`--resume=${call.resumeSession}`] : []),
    // The call's narrowing options, as a policy file (gemini_policy.ts).
    ...(call.narrowing !== undefined
      ? geminiPolicyPaths(call).map((path) => `--policy=${path}`)
      : []),
    ...call.extraArgs,
  ];
}

/**
 * Parses a JSON document out of lines: the whole text, or else from the last line that opens an
 * object, at column 0 or at the end of a line (Gemini's error document on standard error can
 * follow a cut-off log line without a newline). Returns the object and how many non-blank lines
 * before it were skipped.
 */
function parseDocument(lines: readonly string[]): { doc?: JsonRecord; skipped: number } {
  const whole = lines.join("\n").trim();
  if (whole === "") return { skipped: 0 };
  const parse = (text: string): JsonRecord | undefined => {
    try {
      const value: unknown = JSON.parse(text);
      return isRecord(value) ? value : undefined;
    } catch {
      return undefined;
    }
  };
  const doc = parse(whole);
  if (doc) return { doc, skipped: 0 };
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    const at = line.startsWith("{") ? 0 : line.trimEnd().endsWith("{") ? line.lastIndexOf("{") : -1;
    if (at < 0) continue;
    const found = parse([line.slice(at), ...lines.slice(i + 1)].join("\n"));
    if (!found) continue;
    const before = lines.slice(0, i).filter((l) => l.trim() !== "").length;
    return { doc: found, skipped: before + (at > 0 ? 1 : 0) };
  }
  return { skipped: lines.filter((line) => line.trim() !== "").length };
}

/**
 * An error document's message for people. Gemini passes the model API's error body on as the
 * message (`{"error":{"code":401,"message":...,"status":"UNAUTHENTICATED"}}`); its `code` is the
 * HTTP status, or Gemini's own exit code.
 */
export function geminiErrorMessage(error: JsonRecord): string {
  const code = count(error, "code");
  let message = text(error, "message") ?? "";
  let status: string | undefined;
  try {
    const body = field(JSON.parse(message), "error");
    if (body) {
      status = text(body, "status");
      message = text(body, "message") ?? message;
    }
  } catch {
    // Plain text.
  }
  const http = code !== undefined && code >= 100 && code <= 599;
  // Gemini's own failures keep its error type in front (`Error: ...`).
  const head = http
    ? `the model API answered HTTP ${code}${status ? ` ${status}` : ""}`
    : text(error, "type");
  return [head, message.trim()].filter(Boolean).join(": ") || "an error";
}

/** What a failed `--resume` wrote (exit 42, plain text): its first line. */
function resumeFailure(stderrTail: readonly string[]): string | undefined {
  const line = stderrTail.find((l) => /^Error resuming session:/.test(l.trim()));
  return line?.trim().replace(/^Error resuming session:\s*/, "");
}

/**
 * The model that answered: the one whose `roles` has `main` (with routing, the router's model
 * reports usage too, under `utility_router`). Without roles, the call's model, else the one
 * with the most output tokens.
 */
function answeringModel(models: JsonRecord, asked: string | undefined): string | null {
  let main: { name: string; candidates: number } | undefined;
  for (const [name, stats] of Object.entries(models)) {
    const role = field(field(stats, "roles"), "main");
    if (!role) continue;
    const candidates = tokens(field(role, "tokens"), "candidates");
    if (!main || candidates > main.candidates) main = { name, candidates };
  }
  if (main) return main.name;
  if (asked !== undefined && asked in models) return asked;
  let most: { name: string; candidates: number } | undefined;
  for (const [name, stats] of Object.entries(models)) {
    const candidates = tokens(field(stats, "tokens"), "candidates");
    if (!most || candidates > most.candidates) most = { name, candidates };
  }
  return most?.name ?? asked ?? null;
}

/** The run's usage: every model's, the router's included (its tokens are spent and billed). */
function usageOf(models: JsonRecord): { input_tokens: number; output_tokens: number } {
  let input = 0;
  let output = 0;
  for (const stats of Object.values(models)) {
    const used = field(stats, "tokens");
    input += tokens(used, "prompt");
    // Thinking tokens are generated (and billed) like the answer's own.
    output += tokens(used, "candidates") + tokens(used, "thoughts");
  }
  return { input_tokens: input, output_tokens: output };
}

function failedReport(stdout: readonly string[], stderrTail: readonly string[]) {
  const { doc, skipped } = parseDocument(stdout);
  const error = field(doc, "error") ?? field(parseDocument(stderrTail).doc, "error");
  if (error) return { failed: true, errors: [geminiErrorMessage(error)], malformed: skipped };
  const resume = resumeFailure(stderrTail);
  if (resume !== undefined) {
    return { failed: true, errors: [`cannot resume the session: ${resume}`], malformed: skipped };
  }
  return undefined;
}

/**
 * The progress in Gemini's `--output-format json` document, which comes whole at the end: the
 * tools it used (by name and count, from `stats.tools.byName`), then the answer's text, or
 * its error.
 */
export function geminiProgress(doc: JsonRecord | undefined, progress: ProgressChannel): void {
  const error = field(doc, "error");
  if (error) progress.error(geminiErrorMessage(error));
  const tools = field(field(field(doc, "stats"), "tools"), "byName") ?? {};
  for (const [name, stats] of Object.entries(tools)) {
    const calls = count(stats, "count") ?? 1;
    progress.tool(name, calls > 1 ? `${calls} calls` : null);
    const failed = count(stats, "fail") ?? 0;
    if (failed > 0) progress.error(`${name}: ${failed} failed`);
  }
  const response = text(doc, "response");
  if (response) progress.text(response);
  progress.flush();
}

function geminiReader(
  call: HarnessCall,
  _env: Readonly<Record<string, string>>,
  progress: ProgressChannel,
): OutputReader {
  const lines: string[] = [];
  let bytes = 0;
  let overflow = false;
  return {
    line(line) {
      bytes += line.length + 1;
      if (bytes > STDOUT_LINE_LIMIT) overflow = true;
      else lines.push(line);
    },
    finish(stderrTail) {
      if (overflow) return { failed: false, errors: [], malformed: 1 };
      geminiProgress(parseDocument(lines).doc, progress);
      const failed = failedReport(lines, stderrTail);
      if (failed) return failed;
      // Malformed: lines before the document, or every line when there is none.
      const { doc, skipped: malformed } = parseDocument(lines);
      const response = text(doc, "response");
      if (!doc || response === undefined) return { failed: false, errors: [], malformed };
      const models = field(field(doc, "stats"), "models") ?? {};
      return {
        answer: {
          output: response,
          usage: usageOf(models),
          cost_usd: null,
          model: answeringModel(models, call.model),
          session_id: text(doc, "session_id") ?? call.resumeSession ?? null,
        },
        failed: false,
        errors: [],
        malformed,
      };
    },
  };
}

/**
 * Points Gemini at the configured base URL, with the Gemini home svc keeps for the provider
 * (see gemini_home.ts) unless the configuration names a `GEMINI_CLI_HOME` of its own.
 */
async function prepareGemini(call: HarnessCall, env: Record<string, string>): Promise<void> {
  const home = call.stateDir;
  if (call.baseUrl === undefined || env.GEMINI_CLI_HOME !== undefined || !home) return;
  await ensureGeminiHome(call.provider, home);
  env.GEMINI_CLI_HOME = home;
}

/** Gemini's home and, for a call with narrowing options, its policy file. */
async function prepareGeminiCall(call: HarnessCall, env: Record<string, string>): Promise<void> {
  await prepareGemini(call, env);
  if (call.narrowing !== undefined) await writeGeminiPolicies(call);
}

/** How svc drives the Gemini CLI (exported for the command-line tests). */
export const GEMINI: HarnessTool = {
  tool: "gemini",
  keyEnv: HARNESS_KEY_ENV.gemini,
  authHint: "set GEMINI_API_KEY, or run `gemini` once and choose how to log in",
  authPattern:
    /auth method|API key not valid|API_KEY_INVALID|UNAUTHENTICATED|PERMISSION_DENIED|answered HTTP 40[13]\b|FatalAuthenticationError|failed to login|error authenticating/i,
  // FatalAuthenticationError's exit code, and HTTP 401 and 403 modulo 256.
  authExitCodes: [41, 401 % 256, 403 % 256],
  // Usage statistics have no variable: the settings of svc's Gemini home turn them off.
  defaultEnv: { GEMINI_TELEMETRY_ENABLED: "false" },
  env: (call) => call.baseUrl !== undefined ? { GOOGLE_GEMINI_BASE_URL: call.baseUrl } : undefined,
  prepare: prepareGeminiCall,
  args: geminiArgs,
  narrowing: geminiNarrowingProblem,
  reader: geminiReader,
};

/**
 * The Gemini CLI provider. Sandbox levels map to `--approval-mode default`, `auto_edit` and
 * `yolo`; `resumeSession` becomes `--resume=<session id>` (Gemini keeps sessions per project
 * directory, so a resumed call must run in the same directory). With `baseUrl`, Gemini talks to
 * that endpoint with its API key, its settings in a home of svc's (`GEMINI_CLI_HOME`). Gemini
 * reports no cost.
 */
export function geminiProvider(options: HarnessOptions = {}): Provider {
  return createHarnessProvider(GEMINI, options);
}
