/**
 * Codex: `codex exec --json`, a JSON-lines stream of thread, turn and item events. The answer is
 * the last `agent_message` item; `turn.completed` carries the usage; there is no cost.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
import { SvcError } from "../../errors/mod.ts";
import { field, parseJsonLine, text, tokens } from "./json_fields.ts";
import {
  createHarnessProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessTool,
  type OutputReader,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";
import { CODEX_REASONING_EFFORT } from "../effort.ts";
import { type CodexTokens, threadUsage } from "./codex_threads.ts";
import { codexProgress } from "./codex_progress.ts";
import { CODEX_HELPER_LEVELS, prepareCodexHelper } from "./codex_helper.ts";
import { codexNarrowingProblem } from "./narrowing.ts";
import type { ProgressChannel } from "../progress.ts";

/** Codex's sandbox mode of each svc sandbox level. */
export const CODEX_SANDBOX: Record<SandboxLevel, string> = {
  "read-only": "read-only",
  write: "workspace-write",
  full: "danger-full-access",
};

/**
 * Codex's `workspace-write` also lets commands write `/tmp` and `$TMPDIR`; svc's `write` means
 * the working directory only, so both are taken away (`--add-dir` in the extra arguments gives
 * a directory back).
 */
const WRITE_ONLY_WORKDIR: Record<SandboxLevel, readonly string[]> = {
  "read-only": [],
  write: [
    "-c",
    "sandbox_workspace_write.exclude_slash_tmp=true",
    "-c",
    "sandbox_workspace_write.exclude_tmpdir_env_var=true",
  ],
  full: [],
};

/**
 * Switches of Codex's non-essential traffic, as `-c` overrides (checked with `--strict-config`
 * against codex-cli 0.169.0, which has no variables for them): analytics, the feedback uploader,
 * the update check, OpenTelemetry logs and metrics.
 */
export const CODEX_QUIET: readonly string[] = [
  "analytics.enabled=false",
  "feedback.enabled=false",
  "check_for_update_on_startup=false",
  'otel.exporter="none"',
  'otel.metrics_exporter="none"',
];

/** The id of the model provider svc defines for a configured base URL. */
export const CODEX_PROVIDER_ID = "svc";

/**
 * A configured base URL as a Codex model provider, defined on the command line so that no file
 * of the user's `CODEX_HOME` is touched (Codex ignores `OPENAI_BASE_URL`). Codex sends
 * `POST <base_url>/responses`; `requires_openai_auth` makes it send the credentials it would
 * send to OpenAI (`CODEX_API_KEY`, or its login), and none when it has none (a local server).
 * The URL arrives as a TOML string (JSON's escapes are TOML's), after `new URL()` checked it.
 */
function providerArgs(baseUrl: string): string[] {
  const id = CODEX_PROVIDER_ID;
  const url = new URL(baseUrl).href.replace(/\/+$/, "");
  return [
    `model_provider="${id}"`,
    `model_providers.${id}.name="${id}"`,
    `model_providers.${id}.base_url=${JSON.stringify(url)}`,
    `model_providers.${id}.wire_api="responses"`,
    `model_providers.${id}.requires_openai_auth=true`,
  ].flatMap((entry) => ["-c", entry]);
}

/**
 * The command line. The prompt is `-`, which makes `codex exec` read it from standard input
 * (one argument is limited to 128 KiB); the model is glued to its option (`--model=<name>`),
 * and the thread id comes after `--`, so that no value from the call can be read as an option.
 * In codex-cli 0.169 global options (`-a`, `--search`) are refused after `exec`, and `exec
 * resume` refuses `--sandbox`, so a resumed call sets the mode as a configuration override,
 * `-c sandbox_mode="<mode>"`. svc's
 * switches and the provider come first, right after `exec`; then the extra arguments, which may
 * be `exec`'s own options (`--ephemeral`, `--add-dir`) or `-c` overrides (a later `-c` wins, so
 * they can change svc's); then the call's own settings. `--skip-git-repo-check` because calls
 * may run in a scratch directory that is not a repository.
 */
function codexArgs(call: HarnessCall): string[] {
  const mode = CODEX_SANDBOX[call.sandbox];
  const head = [
    "exec",
    ...CODEX_QUIET.flatMap((entry) => ["-c", entry]),
    ...(call.baseUrl !== undefined ? providerArgs(call.baseUrl) : []),
    ...call.extraArgs,
  ];
  const common = [
    "--json",
    "--skip-git-repo-check",
    ...(call.model !== undefined ? [`--model=${call.model}`] : []),
    ...(call.effort !== undefined
      ? ["-c", `model_reasoning_effort="${CODEX_REASONING_EFFORT[call.effort]}"`]
      : []),
  ];
  if (call.resumeSession !== undefined) {
    return [
      ...head,
      "resume",
      ...common,
      "-c",
      `sandbox_mode="${mode}"`,
      ...WRITE_ONLY_WORKDIR[call.sandbox],
      "--",
      call.resumeSession,
      "-",
    ];
  }
  return [...head, ...common, "--sandbox", mode, ...WRITE_ONLY_WORKDIR[call.sandbox], "--", "-"];
}

/** What a shell command prints when Codex runs it without its sandbox helper. */
const HELPER_MISSING = /execvp codex-linux-sandbox/;
/** Codex's warning on standard error when it will not create the helper. */
const HELPER_REFUSED = /Refusing to create helper binaries under temporary dir/;

/**
 * The error of a call whose shell commands all failed because Codex had no sandbox helper. Codex
 * refuses to create the helper (`codex-linux-sandbox`, under `CODEX_HOME`) when `CODEX_HOME` lies
 * under the temp directory; its own warning is quoted when it gave one.
 */
function helperError(stderrTail: readonly string[]): string {
  const warning = stderrTail.find((line) => HELPER_REFUSED.test(line));
  return `Codex could not start its sandbox helper (bwrap: execvp codex-linux-sandbox), so no shell command of this call ran${
    warning ? ` (${warning.trim()})` : ""
  }: Codex will not create the helper under the temp directory; put CODEX_HOME (or HOME) outside TMPDIR, or set TMPDIR to a directory that does not hold CODEX_HOME`;
}

/** Counts of one `turn.completed`, less what the thread had used before the call. */
function turnUsage(used: unknown, before: CodexTokens | undefined): CodexTokens {
  const input = tokens(used, "input_tokens");
  const output = tokens(used, "output_tokens");
  return {
    input_tokens: Math.max(0, input - (before?.input_tokens ?? 0)),
    output_tokens: Math.max(0, output - (before?.output_tokens ?? 0)),
  };
}

/**
 * Reads `codex exec --json`. A resumed call first reads what the thread had used (Codex reports
 * the thread's running total after a resume), so that the call's usage is its own.
 */
async function codexReader(
  call: HarnessCall,
  env: Readonly<Record<string, string>>,
  progress: ProgressChannel,
): Promise<OutputReader> {
  const before = call.resumeSession !== undefined
    ? await threadUsage(call.resumeSession, env)
    : undefined;
  let malformed = 0;
  let threadId: string | undefined;
  let message: string | undefined;
  let turns = 0;
  let failed = false;
  let helperMissing = false;
  const usage = { input_tokens: 0, output_tokens: 0 };
  const errors: string[] = [];
  return {
    line(line) {
      const event = parseJsonLine(line);
      if (event === null) return;
      if (event === undefined) {
        malformed++;
        return;
      }
      codexProgress(event, progress);
      switch (text(event, "type")) {
        case "thread.started":
          threadId = text(event, "thread_id") ?? threadId;
          break;
        case "item.completed": {
          const item = field(event, "item");
          // `item_type` and `assistant_message` are the names of the first JSON format.
          const kind = text(item, "type") ?? text(item, "item_type");
          if (kind === "agent_message" || kind === "assistant_message") {
            message = text(item, "text") ?? message;
          }
          if (kind === "command_execution") {
            helperMissing ||= HELPER_MISSING.test(text(item, "aggregated_output") ?? "");
          }
          break;
        }
        case "turn.completed": {
          turns++;
          // `input_tokens` holds the cached and cache-written parts, `output_tokens` the
          // reasoning: the parts are not added again.
          const used = turnUsage(field(event, "usage"), before);
          usage.input_tokens = used.input_tokens;
          usage.output_tokens = used.output_tokens;
          break;
        }
        case "turn.failed":
          failed = true;
          errors.push(text(field(event, "error"), "message") ?? "the turn failed");
          break;
        case "error":
          // Also used for passing notices ("Reconnecting... 1/5"): fatal only without a turn.
          errors.push(text(event, "message") ?? "error");
          break;
      }
    },
    finish(stderrTail) {
      // Codex 0.171 reports no item for a command whose sandbox could not start: its warning
      // is what says they failed.
      helperMissing ||= CODEX_HELPER_LEVELS.includes(call.sandbox) &&
        stderrTail.some((line) => HELPER_REFUSED.test(line));
      if (helperMissing) {
        return { failed: true, errors: [...errors, helperError(stderrTail)], malformed };
      }
      if (failed || turns === 0) return { failed, errors, malformed };
      return {
        answer: {
          output: message ?? "",
          usage: { ...usage },
          cost_usd: null,
          model: call.model ?? null,
          session_id: threadId ?? call.resumeSession ?? null,
        },
        failed: false,
        errors,
        malformed,
      };
    },
  };
}

/** How svc drives Codex (exported for the command-line tests). */
export const CODEX: HarnessTool = {
  tool: "codex",
  keyEnv: HARNESS_KEY_ENV.codex,
  authHint: "run `codex login`, or set CODEX_API_KEY",
  authPattern:
    /401 Unauthorized|not logged in|codex login|missing bearer|invalid api key|incorrect api key|invalid_api_key/i,
  args: codexArgs,
  reader: codexReader,
  narrowing: codexNarrowingProblem,
};

/** Refuses a base URL Codex could not be given safely (it reaches a `-c` override). */
function checkBaseUrl(baseUrl: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(baseUrl).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== "http:" && protocol !== "https:") {
    throw new SvcError(
      "invalid_request",
      `Cannot create the codex provider: base_url ${
        JSON.stringify(baseUrl)
      } is not an http or https URL`,
    );
  }
}

/**
 * The Codex provider. Sandbox levels map to Codex's `read-only`, `workspace-write` and
 * `danger-full-access`; `resumeSession` (a thread id) becomes `codex exec resume <id>`; a
 * `baseUrl` becomes a model provider of the command line. Codex reports no cost, so `cost_usd`
 * is null (the dispatcher prices it); the model is the one asked for, or null when Codex chose
 * its default.
 */
export function codexProvider(options: HarnessOptions = {}): Provider {
  if (options.baseUrl !== undefined) checkBaseUrl(options.baseUrl);
  // Codex's sandbox helper needs a temp directory that does not hold CODEX_HOME (codex_helper.ts).
  const fixedTmpdir = options.env?.TMPDIR !== undefined;
  return createHarnessProvider({
    ...CODEX,
    prepare: (call, env) => prepareCodexHelper(call, env, fixedTmpdir),
  }, options);
}
