/**
 * Claude Code: `claude -p --output-format stream-json --verbose`, whose last line is a
 * `{"type":"result"}` object with the answer, the session id, the cost and the usage.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
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
  type HarnessTool,
  type OutputReader,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";
import { NATIVE_CLAUDE_ALIASES } from "../model_aliases.ts";

/** Tools a read-only call may not use: everything that writes files or runs commands. */
export const CLAUDE_READ_ONLY_DENIED = "Bash,Edit,Write,NotebookEdit";

/**
 * The permission flags of a sandbox level. Read-only names the default mode explicitly (so that a
 * user's settings cannot widen it) and denies the writing tools; in print mode nobody can approve
 * anything, so whatever would ask is refused.
 */
function sandboxArgs(level: SandboxLevel): string[] {
  switch (level) {
    case "read-only":
      return ["--permission-mode", "default", "--disallowedTools", CLAUDE_READ_ONLY_DENIED];
    case "write":
      return ["--permission-mode", "acceptEdits"];
    case "full":
      return ["--dangerously-skip-permissions"];
  }
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
    ...sandboxArgs(call.sandbox),
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

function claudeReader(call: HarnessCall): OutputReader {
  let malformed = 0;
  let model: string | undefined;
  let sessionId: string | undefined;
  let result: JsonRecord | undefined;
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
      const type = text(event, "type");
      if (type === "system" && text(event, "subtype") === "init") {
        model = text(event, "model") ?? model;
      } else if (type === "assistant") {
        // A message the CLI made up itself (not logged in, API errors) carries `error`.
        const error = text(event, "error");
        if (error !== undefined) errors.push(`${assistantText(event)} (${error})`);
      } else if (type === "result") {
        result = event;
      }
    },
    finish() {
      if (!result) return { failed: false, errors, malformed };
      const subtype = text(result, "subtype");
      const answer = text(result, "result");
      const usage = field(result, "usage");
      const used = {
        input_tokens: tokens(usage, "input_tokens") + tokens(usage, "cache_read_input_tokens") +
          tokens(usage, "cache_creation_input_tokens"),
        output_tokens: tokens(usage, "output_tokens"),
      };
      const cost = count(result, "total_cost_usd") ?? count(result, "cost_usd") ?? null;
      if (result.is_error === true || (subtype !== undefined && subtype !== "success")) {
        const what = [answer, subtype !== "success" ? subtype : undefined].filter(Boolean);
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
          model: model ?? Object.keys(modelUsage ?? {})[0] ?? call.model ?? null,
          session_id: text(result, "session_id") ?? sessionId ?? null,
        },
        failed: false,
        errors,
        malformed,
      };
    },
  };
}

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
