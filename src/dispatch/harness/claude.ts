/**
 * Claude Code: `claude -p --output-format stream-json --verbose`, whose last line is a
 * `{"type":"result"}` object with the answer, the session id, the cost and the usage.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider, Usage } from "../types.ts";
import {
  count,
  field,
  isRecord,
  type JsonRecord,
  parseJsonLine,
  text,
  tokens,
} from "./json_fields.ts";
import {
  createHarnessProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessReport,
  type HarnessTool,
  type OutputReader,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";
import { ARG_TEXT_LIMIT } from "./arg_values.ts";
import { clampHookSettings } from "./claude_clamp_hook.ts";
import { platform } from "../../platform/mod.ts";
import { NATIVE_CLAUDE_ALIASES } from "../model_aliases.ts";
import type { ProgressChannel } from "../progress.ts";
import { fileChange, toolTarget } from "./tool_target.ts";

/** Tools a read-only call may not use: everything that writes files or runs commands. */
export const CLAUDE_READ_ONLY_DENIED = "Bash,Edit,Write,NotebookEdit";

/**
 * The permission flags of a sandbox level. Read-only names the default mode explicitly (so that a
 * user's settings cannot widen it) and denies the writing tools; in print mode nobody can approve
 * anything, so whatever would ask is refused. A clamped shell cannot bypass permissions: `full`
 * then accepts edits, and allows the clamp's commands and the web tools (`narrowingArgs`).
 */
function sandboxArgs(level: SandboxLevel, clamped: boolean): string[] {
  switch (level) {
    case "read-only":
      return ["--permission-mode", "default", "--disallowedTools", CLAUDE_READ_ONLY_DENIED];
    case "write":
      return ["--permission-mode", "acceptEdits"];
    case "full":
      return clamped ? ["--permission-mode", "acceptEdits"] : ["--dangerously-skip-permissions"];
  }
}

/** Claude Code's tools besides Bash that run shell commands: denied while Bash is clamped. */
const OTHER_SHELL_TOOLS = ["Monitor", "PowerShell"];

/** What `full` allows beyond edits when its shell is clamped: the network tools. */
const FULL_CLAMPED_ALLOWED = ["WebFetch", "WebSearch"];

/**
 * The call's narrowing options as Claude Code's own permission rules, in a `--settings` JSON
 * (whole rules, never split as a flag's list is): `disallowedTools` are deny rules, which take
 * a tool out of what the model is offered; a clamp's rules are the only Bash rules allowed, and
 * in print mode every other command would ask, so it is refused. A read-only call has no Bash
 * at all, which a clamp cannot widen.
 */
function narrowingSettings(call: HarnessCall, deno: string | undefined): string | undefined {
  if (call.narrowing === undefined) return undefined;
  const { disallowedTools, bashCommandClamp } = call.narrowing;
  const clamped = call.sandbox !== "read-only" && bashCommandClamp.length > 0;
  const allow = clamped
    ? [...bashCommandClamp, ...(call.sandbox === "full" ? FULL_CLAMPED_ALLOWED : [])]
    : [];
  // Claude Code's other shell surfaces cannot match a clamp's Bash forms: it denies them too.
  const deny = [...disallowedTools, ...(clamped ? OTHER_SHELL_TOOLS : [])];
  const permissions = {
    ...(deny.length > 0 ? { deny } : {}),
    ...(allow.length > 0 ? { allow } : {}),
  };
  // The rules allow the clamp's commands without asking; the hook denies every other command.
  const hooks = clamped && deno !== undefined
    ? { disableAllHooks: false, hooks: clampHookSettings(deno, bashCommandClamp) }
    : {};
  return JSON.stringify({ permissions, ...hooks });
}

/**
 * Why Claude Code cannot hold this call's narrowing: a clamp needs svc's Deno for its hook,
 * and the settings must fit one argument.
 */
function claudeNarrowing(call: HarnessCall): string | undefined {
  const deno = platform().denoExecutable();
  const clamped = call.sandbox !== "read-only" &&
    (call.narrowing?.bashCommandClamp.length ?? 0) > 0;
  if (clamped && deno === undefined) {
    return "no deno executable was found to run the hook that clamps its shell";
  }
  const settings = narrowingSettings(call, deno) ?? "";
  return settings.length > ARG_TEXT_LIMIT
    ? `its settings would be longer than one argument (${ARG_TEXT_LIMIT} characters)`
    : undefined;
}

/**
 * Values from the call are glued to their option (`--resume=<id>`): `--resume` takes an
 * optional value, and commander takes the next argument for it only when it does not look like
 * an option. The prompt is not an argument: without one, `claude -p` reads it from standard
 * input, where its length has no limit.
 */
function claudeArgs(call: HarnessCall): string[] {
  return [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    ...(call.model !== undefined ? [`--model=${call.model}`] : []),
    // Claude Code's own five levels, passed as they are.
    ...(call.effort !== undefined ? [`--effort=${call.effort}`] : []),
    // An agent type's body replaces the system prompt, as in Claude Code's own subagents.
    ...(call.system !== undefined ? [`--system-prompt=${call.system}`] : []),
    ...(call.resumeSession !== undefined ? [`--resume=${call.resumeSession}`] : []),
    ...sandboxArgs(call.sandbox, (call.narrowing?.bashCommandClamp.length ?? 0) > 0),
    ...(call.narrowing !== undefined
      ? [`--settings=${narrowingSettings(call, platform().denoExecutable())}`]
      : []),
    ...call.extraArgs,
  ];
}

/** The text blocks of an assistant message. */
function assistantText(event: JsonRecord): string {
  const content = field(event, "message")?.content;
  if (!Array.isArray(content)) return "";
  return content.filter((block) => isRecord(block) && block.type === "text")
    .map((block) => text(block, "text") ?? "").join("\n");
}

/** What one result line says its stretch of the run used and cost. */
interface Spend {
  usage: Usage;
  cost: number | null;
}

/**
 * What one result line's stretch of the run used. `model_usage_since_last_result` counts every
 * model's tokens and cost since the previous result, sub-agents included (the result's own
 * `usage` counts the main loop only); it is there on a first turn too. Without it, `usage` is the
 * stretch's, and `total_cost_usd` its cost only for the first result of a run that resumed no
 * session: it is the session's total so far, so otherwise the cost is unknown rather than
 * counted again.
 */
function resultSpend(result: JsonRecord, options: { resumed: boolean; first: boolean }): Spend {
  const perModel = field(result, "model_usage_since_last_result");
  if (perModel !== undefined) {
    const models = Object.values(perModel);
    const costs = models.map((usage) => count(usage, "costUSD"));
    return {
      usage: {
        input_tokens: models.reduce(
          (sum: number, u) =>
            sum + tokens(u, "inputTokens") + tokens(u, "cacheReadInputTokens") +
            tokens(u, "cacheCreationInputTokens"),
          0,
        ),
        output_tokens: models.reduce((sum: number, u) => sum + tokens(u, "outputTokens"), 0),
      },
      cost: costs.every((cost) => cost !== undefined)
        ? costs.reduce((sum: number, cost) => sum + cost!, 0)
        : null,
    };
  }
  const usage = field(result, "usage");
  const cost = options.resumed || !options.first
    ? null
    : count(result, "total_cost_usd") ?? count(result, "cost_usd") ?? null;
  return { usage: turnUsage(usage), cost };
}

/**
 * What a whole run used: the sum over its result lines. A run prints one result per turn of its
 * main loop, and more than one when a background sub-agent's notification starts another.
 */
function runSpend(results: readonly JsonRecord[], resumed: boolean): Spend {
  const spends = results.map((result, i) => resultSpend(result, { resumed, first: i === 0 }));
  return {
    usage: {
      input_tokens: spends.reduce((sum, s) => sum + s.usage.input_tokens, 0),
      output_tokens: spends.reduce((sum, s) => sum + s.usage.output_tokens, 0),
    },
    cost: spends.every((s) => s.cost !== null)
      ? Math.round(spends.reduce((sum, s) => sum + s.cost!, 0) * 1e12) / 1e12
      : null,
  };
}

/** The tokens of a result's `usage`: the main loop's, of this run only, resumed or not. */
function turnUsage(usage: JsonRecord | undefined): Usage {
  return {
    input_tokens: tokens(usage, "input_tokens") + tokens(usage, "cache_read_input_tokens") +
      tokens(usage, "cache_creation_input_tokens"),
    output_tokens: tokens(usage, "output_tokens"),
  };
}

/** The reasons an error result lists in `errors` (an unknown `--resume` id says so there). */
function resultErrors(result: JsonRecord): string[] {
  const errors = result.errors;
  if (!Array.isArray(errors)) return [];
  return errors.filter((error): error is string => typeof error === "string" && error !== "");
}

/** What Claude Code prints, and exits 1, when `--dangerously-skip-permissions` runs as root. */
const ROOT_REFUSAL = /--dangerously-skip-permissions cannot be used with root\/sudo privileges/;

/**
 * The error of a `full` call Claude Code refused because svc runs as root, naming the cause and
 * the two ways through: a user other than root, or, where the host is itself a sandbox (a
 * container, a VM), Claude Code's own opt-in `IS_SANDBOX=1` in the provider's configuration.
 */
export function claudeRootRefusal(provider: string): string {
  return `Claude Code refuses sandbox "full" (--dangerously-skip-permissions) when it runs as ` +
    `root: run svc as a user other than root, or, if this host is itself a sandbox (a ` +
    `container, a VM), opt in with providers.${provider}.env.IS_SANDBOX = "1" in svc's ` +
    `configuration`;
}

/**
 * The progress in one stream-json line: an assistant message's text and tool uses (a writing
 * tool's file too), and the tool results that report an error.
 */
export function claudeProgress(event: JsonRecord, progress: ProgressChannel): void {
  const type = text(event, "type");
  if (type !== "assistant" && type !== "user") return;
  const content = field(event, "message")?.content;
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (type === "assistant" && block.type === "text") {
      const said = text(block, "text");
      if (said) progress.text(`${said}\n`);
    } else if (type === "assistant" && block.type === "tool_use") {
      const name = text(block, "name") ?? "tool";
      const target = toolTarget(block.input);
      progress.tool(name, target);
      const change = fileChange(name);
      if (change !== undefined && target !== null) progress.file(target, change);
    } else if (type === "user" && block.type === "tool_result" && block.is_error === true) {
      const said = typeof block.content === "string" ? block.content : "the tool failed";
      progress.error(said);
    }
  }
}

/**
 * Keeps `running` (the ids of tool uses started, their result not back yet) up to date from one
 * stream-json line, and tells `progress` how many run whenever that changes.
 */
function trackTools(event: JsonRecord, running: Set<string>, progress: ProgressChannel): void {
  const type = text(event, "type");
  const content = field(event, "message")?.content;
  if ((type !== "assistant" && type !== "user") || !Array.isArray(content)) return;
  const before = running.size;
  for (const block of content) {
    if (!isRecord(block)) continue;
    const id = text(block, type === "assistant" ? "id" : "tool_use_id");
    if (id === undefined) continue;
    if (type === "assistant" && block.type === "tool_use") running.add(id);
    else if (type === "user" && block.type === "tool_result") running.delete(id);
  }
  if (running.size !== before) progress.toolsRunning?.(running.size);
}

function claudeReader(
  call: HarnessCall,
  _env: Readonly<Record<string, string>>,
  progress: ProgressChannel,
): OutputReader {
  const tools = new Set<string>();
  let malformed = 0;
  let model: string | undefined;
  let sessionId: string | undefined;
  const results: JsonRecord[] = [];
  const errors: string[] = [];
  return {
    line(line) {
      const event = parseJsonLine(line);
      if (event === null) return;
      if (event === undefined) {
        malformed++;
        return;
      }
      sessionId = text(event, "session_id") ?? sessionId;
      claudeProgress(event, progress);
      trackTools(event, tools, progress);
      const type = text(event, "type");
      if (type === "system" && text(event, "subtype") === "init") {
        model = text(event, "model") ?? model;
      } else if (type === "assistant") {
        // A message the CLI made up itself (not logged in, API errors) carries `error`.
        const error = text(event, "error");
        if (error !== undefined) errors.push(`${assistantText(event)} (${error})`);
      } else if (type === "result") {
        results.push(event);
      }
    },
    finish(stderrTail) {
      if (results.length === 0) {
        const refused = stderrTail.some((line) => ROOT_REFUSAL.test(line));
        return refused
          ? { failed: true, errors: [...errors, claudeRootRefusal(call.provider)], malformed }
          : { failed: false, errors, malformed };
      }
      return resultReport(call, results, { model, sessionId, errors, malformed });
    },
  };
}

/** The report of a run that printed result lines: the last one's answer, all of their spend. */
function resultReport(
  call: HarnessCall,
  results: readonly JsonRecord[],
  seen: { model?: string; sessionId?: string; errors: string[]; malformed: number },
): HarnessReport {
  const { errors, malformed } = seen;
  const result = results.at(-1)!;
  const subtype = text(result, "subtype");
  const answer = text(result, "result");
  const usage = field(result, "usage");
  const { usage: used, cost } = runSpend(results, call.resumeSession !== undefined);
  if (result.is_error === true || (subtype !== undefined && subtype !== "success")) {
    const what = [answer, ...resultErrors(result), subtype !== "success" ? subtype : undefined]
      .filter(Boolean);
    return {
      failed: true,
      errors: [...errors, what.join(" ") || "an error result"],
      malformed,
      // An error result (max turns, an API error mid-way) still reports what the turn used.
      ...(usage !== undefined ? { spent: { usage: used, cost_usd: cost } } : {}),
    };
  }
  const modelUsage = field(result, "modelUsage");
  return {
    answer: {
      output: answer ?? "",
      usage: used,
      cost_usd: cost,
      model: seen.model ?? Object.keys(modelUsage ?? {})[0] ?? call.model ?? null,
      session_id: text(result, "session_id") ?? seen.sessionId ?? null,
    },
    failed: false,
    errors,
    malformed,
  };
}

/**
 * Variables every Claude Code call gets unless the configuration sets them. Telemetry, error
 * reports, update checks and other non-essential traffic are off. `CLAUDE_CODE_MAX_RETRIES`
 * bounds the retries of a failed API request: Claude Code's own default (10, with delays
 * doubling from about half a second) retries even a refused key, which was still unreported
 * after a minute; with 3 a 401 fails within about 5 s, and a passing 429 or 5xx still gets three more tries (after the
 * server's `retry-after` when it sends one).
 */
export const CLAUDE_DEFAULT_ENV: Readonly<Record<string, string>> = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_AUTOUPDATER: "1",
  DISABLE_TELEMETRY: "1",
  DISABLE_ERROR_REPORTING: "1",
  CLAUDE_CODE_MAX_RETRIES: "3",
};

/** How svc drives Claude Code (exported for the command-line tests). */
export const CLAUDE: HarnessTool = {
  tool: "claude",
  keyEnv: HARNESS_KEY_ENV.claude,
  authHint: "run `claude` and /login, or set ANTHROPIC_API_KEY",
  authPattern:
    /not logged in|invalid api key|please run \/login|oauth token has expired|authentication_failed|authentication_error|invalid x-api-key/i,
  systemPrompt: "native",
  modelAliases: NATIVE_CLAUDE_ALIASES,
  args: claudeArgs,
  narrowing: claudeNarrowing,
  defaultEnv: CLAUDE_DEFAULT_ENV,
  // The configured endpoint is Claude Code's own variable (a gateway, a local server).
  env: (call) => (call.baseUrl !== undefined ? { ANTHROPIC_BASE_URL: call.baseUrl } : undefined),
  reader: claudeReader,
};

/**
 * The Claude Code provider. Sandbox levels map to `--permission-mode default` with the writing
 * tools denied (read-only), `--permission-mode acceptEdits` (write) and
 * `--dangerously-skip-permissions` (full); `resumeSession` becomes `--resume=<id>`, and the
 * session id of the result (which may be a new one) is returned.
 */
export function claudeProvider(options: HarnessOptions = {}): Provider {
  return createHarnessProvider(CLAUDE, options);
}
