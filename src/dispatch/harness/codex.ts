/**
 * Codex: `codex exec --json`, a JSON-lines stream of thread, turn and item events. The answer is
 * the last `agent_message` item; `turn.completed` carries the usage; there is no cost.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
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

/** Codex's sandbox mode of each svc sandbox level. */
export const CODEX_SANDBOX: Record<SandboxLevel, string> = {
  "read-only": "read-only",
  write: "workspace-write",
  full: "danger-full-access",
};

/**
 * The prompt is `-`, which makes `codex exec` read it from standard input (one argument is
 * limited to 128 KiB); the model is glued to its option (`--model=<name>`), and the thread id
 * comes after `--`, so that no value from the call can be read as an option. A new session
 * passes `--sandbox <mode>`; `codex exec resume` refuses `--sandbox` (and would
 * otherwise keep the mode the session was recorded with), so a resumed one sets the same mode
 * as a configuration override, `-c sandbox_mode="<mode>"`. `--skip-git-repo-check` because calls
 * may run in a scratch directory that is not a repository. Extra arguments go right after
 * `exec`, where both `exec`'s own options and the global ones are accepted.
 */
function codexArgs(call: HarnessCall): string[] {
  const mode = CODEX_SANDBOX[call.sandbox];
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
      "exec",
      ...call.extraArgs,
      "resume",
      ...common,
      "-c",
      `sandbox_mode="${mode}"`,
      "--",
      call.resumeSession,
      "-",
    ];
  }
  return ["exec", ...call.extraArgs, ...common, "--sandbox", mode, "--", "-"];
}

function codexReader(call: HarnessCall): OutputReader {
  let malformed = 0;
  let threadId: string | undefined;
  let message: string | undefined;
  let turns = 0;
  let failed = false;
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
          break;
        }
        case "turn.completed": {
          turns++;
          const used = field(event, "usage");
          // `cached_input_tokens` is the part of `input_tokens` served from the cache.
          usage.input_tokens += tokens(used, "input_tokens");
          usage.output_tokens += tokens(used, "output_tokens");
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
    finish() {
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
};

/**
 * The Codex provider. Sandbox levels map to Codex's `read-only`, `workspace-write` and
 * `danger-full-access`; `resumeSession` (a thread id) becomes `codex exec resume <id>`. Codex
 * reports no cost, so `cost_usd` is null (the dispatcher prices it); the model is the one asked
 * for, or null when Codex chose its default.
 */
export function codexProvider(options: HarnessOptions = {}): Provider {
  return createHarnessProvider(CODEX, options);
}
