/**
 * Gemini CLI: `gemini -o json` with the prompt on standard input prints one JSON document (pretty-printed over
 * many lines) with `session_id`, `response` and `stats.models.<model>.tokens`; a failure prints
 * `{"error": {type, message, code}}` on standard error and exits with the code.
 * @module
 */
import type { SandboxLevel } from "../../schemas/mod.ts";
import type { Provider } from "../types.ts";
import { field, isRecord, type JsonRecord, text, tokens } from "./json_fields.ts";
import {
  createHarnessProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessTool,
  type OutputReader,
  STDOUT_LINE_LIMIT,
} from "./run_harness.ts";
import { HARNESS_KEY_ENV } from "./harness_env.ts";

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
 */
function geminiArgs(call: HarnessCall): string[] {
  return [
    "--output-format",
    "json",
    ...(call.model !== undefined ? [`--model=${call.model}`] : []),
    "--approval-mode",
    GEMINI_APPROVAL[call.sandbox],
    ...(call.resumeSession !== undefined ? [`--resume=${call.resumeSession}`] : []),
    ...call.extraArgs,
  ];
}

/**
 * Parses a JSON document out of lines: the whole text, or else from the last line that opens an
 * object at column 0 (tools sometimes print a notice before the document). Returns the object
 * and how many non-blank lines before it were skipped.
 */
function parseDocument(lines: readonly string[]): { doc?: JsonRecord; skipped: number } {
  const whole = lines.join("\n").trim();
  if (whole === "") return { skipped: 0 };
  try {
    const value: unknown = JSON.parse(whole);
    if (isRecord(value)) return { doc: value, skipped: 0 };
  } catch {
    // Look for where the document starts.
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]!.startsWith("{")) continue;
    try {
      const value: unknown = JSON.parse(lines.slice(i).join("\n"));
      if (!isRecord(value)) continue;
      const skipped = lines.slice(0, i).filter((line) => line.trim() !== "").length;
      return { doc: value, skipped };
    } catch {
      // Not the start of a complete document.
    }
  }
  return { skipped: lines.filter((line) => line.trim() !== "").length };
}

function geminiReader(call: HarnessCall): OutputReader {
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
      // Malformed: lines before the document, or every line when there is none.
      const { doc, skipped: malformed } = overflow
        ? { doc: undefined, skipped: 1 }
        : parseDocument(lines);
      const error = field(doc, "error") ?? field(parseDocument(stderrTail).doc, "error");
      if (error) {
        const message = [text(error, "type"), text(error, "message")].filter(Boolean).join(": ");
        return { failed: true, errors: [message || "an error"], malformed };
      }
      const response = text(doc, "response");
      if (!doc || response === undefined) return { failed: false, errors: [], malformed };
      const models = field(field(doc, "stats"), "models") ?? {};
      let input = 0;
      let output = 0;
      let main: { name: string; candidates: number } | undefined;
      for (const [name, stats] of Object.entries(models)) {
        const used = field(stats, "tokens");
        const candidates = tokens(used, "candidates");
        input += tokens(used, "prompt");
        // Thinking tokens are generated (and billed) like the answer's own.
        output += candidates + tokens(used, "thoughts");
        if (!main || candidates > main.candidates) main = { name, candidates };
      }
      const model = call.model !== undefined && call.model in models
        ? call.model
        : main?.name ?? call.model ?? null;
      return {
        answer: {
          output: response,
          usage: { input_tokens: input, output_tokens: output },
          cost_usd: null,
          model,
          session_id: text(doc, "session_id") ?? call.resumeSession ?? null,
        },
        failed: false,
        errors: [],
        malformed,
      };
    },
  };
}

/** How svc drives the Gemini CLI (exported for the command-line tests). */
export const GEMINI: HarnessTool = {
  tool: "gemini",
  keyEnv: HARNESS_KEY_ENV.gemini,
  authHint: "set GEMINI_API_KEY, or run `gemini` once and choose how to log in",
  authPattern:
    /auth method|API key not valid|API_KEY_INVALID|UNAUTHENTICATED|FatalAuthenticationError|failed to login|error authenticating/i,
  // FatalAuthenticationError's exit code.
  authExitCodes: [41],
  args: geminiArgs,
  reader: geminiReader,
};

/**
 * The Gemini CLI provider. Sandbox levels map to `--approval-mode default`, `auto_edit` and
 * `yolo`; `resumeSession` becomes `--resume=<session id>` (Gemini keeps sessions per project
 * directory, so a resumed call must run in the same directory). Gemini reports no cost.
 */
export function geminiProvider(options: HarnessOptions = {}): Provider {
  return createHarnessProvider(GEMINI, options);
}
