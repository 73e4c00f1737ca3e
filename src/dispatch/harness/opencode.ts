/**
 * opencode: `opencode run --format json` with the prompt on standard input, a JSON-lines stream
 * of `step_start`, `text`, `tool_use`, `step_finish` (with `cost` and `tokens`) and `error`
 * events, each with `sessionID`.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
import { count, field, parseJsonLine, text, tokens } from "./json_fields.ts";
import {
  createHarnessProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessTool,
  type OutputReader,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";

/**
 * opencode has no sandbox flag: its permissions come from configuration, and the variable
 * `OPENCODE_PERMISSION` (inline JSON) overrides them. Every level answers `edit`, `bash` and
 * `webfetch` explicitly, so that nothing is left to ask (nobody can answer in `run`).
 */
export const OPENCODE_PERMISSION: Record<SandboxLevel, Record<string, "allow" | "deny">> = {
  "read-only": { edit: "deny", bash: "deny", webfetch: "deny" },
  write: { edit: "allow", bash: "deny", webfetch: "deny" },
  full: { edit: "allow", bash: "allow", webfetch: "allow" },
};

/**
 * The prompt goes on standard input, not on the command line: `opencode run` wraps a message
 * argument that contains a space in double quotes (escaping the quotes inside), and a message
 * that looks like a number makes it crash, while piped input reaches the model unchanged.
 * Values from the call are glued to their option (`--model=<name>`): yargs takes the next
 * argument for a string option only when it does not look like an option, so `--model --dir=/x`
 * would run opencode in another directory.
 */
function opencodeArgs(call: HarnessCall): string[] {
  return [
    "run",
    "--format",
    "json",
    ...(call.model !== undefined ? [`--model=${call.model}`] : []),
    // The model's variant: opencode's name for its provider's reasoning effort.
    ...(call.effort !== undefined ? [`--variant=${call.effort}`] : []),
    ...(call.resumeSession !== undefined ? [`--session=${call.resumeSession}`] : []),
    ...call.extraArgs,
  ];
}

function opencodeReader(call: HarnessCall): OutputReader {
  let malformed = 0;
  let sessionId: string | undefined;
  let steps = 0;
  let cost: number | null = null;
  let step: string[] = [];
  let answer: string | undefined;
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
      sessionId = text(event, "sessionID") ?? sessionId;
      const part = field(event, "part");
      switch (text(event, "type")) {
        case "step_start":
          step = [];
          break;
        case "text": {
          const said = text(part, "text");
          if (said !== undefined) step.push(said);
          break;
        }
        case "step_finish": {
          steps++;
          const spent = count(part, "cost");
          if (spent !== undefined) cost = (cost ?? 0) + spent;
          const used = field(part, "tokens");
          const cache = field(used, "cache");
          usage.input_tokens += tokens(used, "input") + tokens(cache, "read") +
            tokens(cache, "write");
          usage.output_tokens += tokens(used, "output") + tokens(used, "reasoning");
          // The answer is the text of the last step that said something.
          if (step.length > 0) answer = step.join("\n");
          step = [];
          break;
        }
        case "error": {
          failed = true;
          const error = field(event, "error");
          const data = field(error, "data");
          const status = count(data, "statusCode");
          const message = [text(error, "name"), text(data, "message")].filter(Boolean).join(": ");
          errors.push(`${message || "error"}${status !== undefined ? ` (HTTP ${status})` : ""}`);
          break;
        }
      }
    },
    finish() {
      if (failed || steps === 0) {
        // Steps that finished before the error were paid for.
        const spent = steps > 0
          ? { usage: { ...usage }, cost_usd: cost === null ? null : Math.round(cost * 1e9) / 1e9 }
          : undefined;
        return { failed, errors, malformed, ...(spent ? { spent } : {}) };
      }
      return {
        answer: {
          output: answer ?? step.join("\n"),
          usage: { ...usage },
          cost_usd: cost === null ? null : Math.round(cost * 1e9) / 1e9,
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

/** How svc drives opencode (exported for the command-line tests). */
export const OPENCODE: HarnessTool = {
  tool: "opencode",
  keyEnv: HARNESS_KEY_ENV.opencode,
  authHint: "run `opencode auth login` for the model's provider",
  authPattern: /ProviderAuthError|HTTP 40[13]\b|api key|unauthori[sz]ed|authentication/i,
  args: opencodeArgs,
  env: (call) => ({ OPENCODE_PERMISSION: JSON.stringify(OPENCODE_PERMISSION[call.sandbox]) }),
  reader: opencodeReader,
};

/**
 * The opencode provider. Sandbox levels become `OPENCODE_PERMISSION` (see
 * {@linkcode OPENCODE_PERMISSION}); `resumeSession` becomes `--session=<id>`; the model is
 * `provider/model`. The answer is the text of the last step; cost and usage are the sums of
 * the `step_finish` parts.
 */
export function opencodeProvider(options: HarnessOptions = {}): Provider {
  return createHarnessProvider(OPENCODE, options);
}
