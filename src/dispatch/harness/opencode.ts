/**
 * opencode: `opencode run --format json` with the prompt on standard input, a JSON-lines stream
 * of `step_start`, `text`, `tool_use`, `step_finish` (with `cost` and `tokens`) and `error`
 * events, each with `sessionID`. Tested with opencode 1.18.33.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
import { count, field, type JsonRecord, parseJsonLine, text, tokens } from "./json_fields.ts";
import {
  createHarnessProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessTool,
  type OutputReader,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";
import type { ProgressChannel } from "../progress.ts";
import { fileChange, toolTarget } from "./tool_target.ts";
import { narrowedPermission, opencodeNarrowingProblem } from "./opencode_narrowing.ts";
import {
  checkOpencodeBaseUrl,
  opencodeEndpointConfig,
  opencodeModel,
} from "./opencode_endpoint.ts";

/**
 * opencode has no sandbox flag: its permissions come from configuration, and the variable
 * `OPENCODE_PERMISSION` (inline JSON) overrides them. Every level answers `edit`, `bash`,
 * `webfetch` and `external_directory` (any tool's use of a path outside the working directory)
 * explicitly: what is left to ask is rejected in `run` (nobody can answer) and stops the run,
 * while a denied tool call is reported to the model, which goes on. So `write` edits inside the
 * working directory only, and `full` anywhere.
 */
export const OPENCODE_PERMISSION: Record<SandboxLevel, Record<string, "allow" | "deny">> = {
  "read-only": { edit: "deny", bash: "deny", webfetch: "deny", external_directory: "deny" },
  write: { edit: "allow", bash: "deny", webfetch: "deny", external_directory: "deny" },
  full: { edit: "allow", bash: "allow", webfetch: "allow", external_directory: "allow" },
};

/**
 * What every run gets unless the configuration's `env` says otherwise (opencode reads `1` or
 * `true`): no update check or self-update, no session sharing, no refresh of the model catalog
 * from models.opencode.ai (the catalog built into the binary, or a cached one, is used), and no
 * download of language servers.
 */
export const OPENCODE_DEFAULT_ENV: Readonly<Record<string, string>> = {
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
};

/**
 * The prompt goes on standard input, not on the command line: `opencode run` wraps a message
 * argument that contains a space in double quotes (escaping the quotes inside), and a message
 * that looks like a number makes it crash, while piped input reaches the model unchanged.
 * Values from the call are glued to their option (`--model=<name>`): yargs takes the next
 * argument for a string option only when it does not look like an option, so `--model --dir=/x`
 * would run opencode in another directory. A new session gets `--title=` (empty: the prompt's
 * first 50 characters): without a title, opencode asks the model for one in an extra request
 * that no event reports, so its tokens and cost would be missed.
 */
function opencodeArgs(call: HarnessCall): string[] {
  return [
    "run",
    "--format",
    "json",
    ...(call.resumeSession === undefined ? ["--title="] : []),
    ...(call.model !== undefined ? [`--model=${call.model}`] : []),
    // The model's variant: opencode's name for its provider's reasoning effort.
    ...(call.effort !== undefined ? [`--variant=${call.effort}`] : []),
    ...(call.resumeSession !== undefined ? [`--session=${call.resumeSession}`] : []),
    ...call.extraArgs,
  ];
}

// deno-lint-ignore no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** opencode's notice on standard error for a permission nobody could grant in `run`. */
const AUTO_REJECTED = /permission requested: .*auto-rejecting/;

/**
 * Why a run stopped after a step that called tools, with no step after it: opencode's own
 * notices on standard error ("permission requested: external_directory (/x/*); auto-rejecting"),
 * else the errors of the step's tool calls.
 */
function stoppedReason(stderrTail: readonly string[], toolErrors: readonly string[]): string {
  const notices = stderrTail.map((line) => line.replace(ANSI, "").replace(/^\W+/, "").trim())
    .filter((line) => AUTO_REJECTED.test(line));
  const why = notices.length > 0 ? notices : toolErrors;
  return `opencode stopped after a tool call, before the model answered${
    why.length > 0 ? `: ${why.join("; ")}` : ""
  }`;
}

/** The message of an `error` event: name, message and HTTP status. */
function errorMessage(event: unknown): string {
  const error = field(event, "error");
  const data = field(error, "data");
  const status = count(data, "statusCode");
  const message = [text(error, "name"), text(data, "message")].filter(Boolean).join(": ");
  return `${message || "error"}${status !== undefined ? ` (HTTP ${status})` : ""}`;
}

/** The running totals of a call's steps. */
interface Steps {
  count: number;
  cost: number | null;
  usage: { input_tokens: number; output_tokens: number };
  /** The finish reason of the last step: `tool-calls` when the model was waiting for results. */
  lastReason?: string;
}

/** Adds one `step_finish` part: its cost, its tokens (cache in the input, reasoning in the output). */
function addStep(steps: Steps, part: unknown): void {
  steps.count++;
  const spent = count(part, "cost");
  if (spent !== undefined) steps.cost = (steps.cost ?? 0) + spent;
  const used = field(part, "tokens");
  const cache = field(used, "cache");
  steps.usage.input_tokens += tokens(used, "input") + tokens(cache, "read") +
    tokens(cache, "write");
  steps.usage.output_tokens += tokens(used, "output") + tokens(used, "reasoning");
  steps.lastReason = text(part, "reason");
}

function costOf(steps: Steps): number | null {
  return steps.cost === null ? null : Math.round(steps.cost * 1e9) / 1e9;
}

/**
 * Reads a run. The answer is the text of the last step that said something; a run whose last
 * step ended calling tools stopped before the model could answer (a tool call was rejected: an
 * `ask` permission in `run`), which opencode ends with exit status 0: a failed call here.
 */
/**
 * The progress in one event of `opencode run --format json`: text, each tool use with its
 * target (a writing tool's file too), a tool's error, and the run's error.
 */
export function opencodeProgress(event: JsonRecord, progress: ProgressChannel): void {
  const part = field(event, "part");
  switch (text(event, "type")) {
    case "text": {
      const said = text(part, "text");
      if (said) progress.text(`${said}\n`);
      break;
    }
    case "tool_use": {
      const name = text(part, "tool") ?? "tool";
      const state = field(part, "state");
      const target = toolTarget(field(state, "input"));
      progress.tool(name, target);
      const change = fileChange(name);
      if (text(state, "status") === "error") {
        progress.error(`${name}: ${text(state, "error") ?? "failed"}`);
      } else if (change !== undefined && target !== null) progress.file(target, change);
      break;
    }
    case "error":
      progress.error(errorMessage(event));
      break;
  }
}

function opencodeReader(
  call: HarnessCall,
  _env: Readonly<Record<string, string>>,
  progress: ProgressChannel,
): OutputReader {
  let malformed = 0;
  let sessionId: string | undefined;
  const steps: Steps = { count: 0, cost: null, usage: { input_tokens: 0, output_tokens: 0 } };
  let step: string[] = [];
  let toolErrors: string[] = [];
  let answer: string | undefined;
  let failed = false;
  const errors: string[] = [];
  return {
    line(line) {
      const event = parseJsonLine(line);
      if (event === null) return;
      if (event === undefined) {
        malformed++;
        return;
      }
      sessionId = text(event, "sessionID") ?? sessionId;
      opencodeProgress(event, progress);
      const part = field(event, "part");
      switch (text(event, "type")) {
        case "step_start":
          step = [];
          toolErrors = [];
          break;
        case "text": {
          const said = text(part, "text");
          if (said !== undefined) step.push(said);
          break;
        }
        case "tool_use": {
          const state = field(part, "state");
          const error = text(state, "error");
          if (text(state, "status") === "error" && error !== undefined) {
            toolErrors.push(`${text(part, "tool") ?? "tool"}: ${error}`);
          }
          break;
        }
        case "step_finish":
          addStep(steps, part);
          if (step.length > 0) answer = step.join("\n");
          step = [];
          break;
        case "error":
          failed = true;
          errors.push(errorMessage(event));
          break;
      }
    },
    finish(stderrTail) {
      const stopped = !failed && steps.lastReason === "tool-calls";
      if (stopped) errors.push(stoppedReason(stderrTail, toolErrors));
      if (failed || stopped || steps.count === 0) {
        // Steps that finished before the error were paid for.
        const spent = steps.count > 0
          ? { usage: { ...steps.usage }, cost_usd: costOf(steps) }
          : undefined;
        return { failed: failed || stopped, errors, malformed, ...(spent ? { spent } : {}) };
      }
      return {
        answer: {
          output: answer ?? step.join("\n"),
          usage: { ...steps.usage },
          cost_usd: costOf(steps),
          model: call.model ?? null,
          session_id: sessionId ?? call.resumeSession ?? null,
        },
        failed: false,
        errors,
        malformed,
      };
    },
  };
}

/**
 * The call's own variables: its permissions, and with a base URL the inline configuration that
 * points the model's provider at it (see {@linkcode opencodeEndpointConfig}).
 */
function opencodeEnv(call: HarnessCall): Record<string, string> {
  const permission = narrowedPermission(OPENCODE_PERMISSION[call.sandbox], call);
  const env = { OPENCODE_PERMISSION: JSON.stringify(permission) };
  if (call.baseUrl === undefined) return env;
  const target = opencodeModel(call.provider, call.model);
  return { ...env, OPENCODE_CONFIG_CONTENT: opencodeEndpointConfig(call.baseUrl, target) };
}

/** How svc drives opencode (exported for the command-line tests). */
export const OPENCODE: HarnessTool = {
  tool: "opencode",
  keyEnv: HARNESS_KEY_ENV.opencode,
  authHint: "run `opencode auth login` for the model's provider",
  authPattern: /ProviderAuthError|HTTP 40[13]\b|api key|unauthori[sz]ed|authentication/i,
  args: opencodeArgs,
  narrowing: opencodeNarrowingProblem,
  defaultEnv: OPENCODE_DEFAULT_ENV,
  env: opencodeEnv,
  reader: opencodeReader,
};

/**
 * The opencode provider. Sandbox levels become `OPENCODE_PERMISSION` (see
 * {@linkcode OPENCODE_PERMISSION}); `resumeSession` becomes `--session=<id>`; the model is
 * `provider/model`; a `baseUrl` points that provider at it through `OPENCODE_CONFIG_CONTENT`.
 * The answer is the text of the last step; cost and usage are the sums of the `step_finish`
 * parts, which are the call's own (a resumed session reports only the new steps).
 */
export function opencodeProvider(options: HarnessOptions = {}): Provider {
  if (options.baseUrl !== undefined) checkOpencodeBaseUrl(options.baseUrl);
  return createHarnessProvider(OPENCODE, options);
}
