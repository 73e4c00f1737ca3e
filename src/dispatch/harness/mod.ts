/**
 * Harness providers: each drives a coding agent's command line non-interactively and reads its
 * structured output (docs/PROVIDERS.md).
 * @module
 */
export { claudeProvider } from "./claude.ts";
export { codexProvider } from "./codex.ts";
export { geminiProvider } from "./gemini.ts";
export { opencodeProvider } from "./opencode.ts";
export { createHarnessProvider, DEFAULT_HARNESS_TIMEOUT_MS, redact } from "./run_harness.ts";
export type {
  HarnessAnswer,
  HarnessCall,
  HarnessOptions,
  HarnessReport,
  HarnessTool,
  OutputReader,
} from "./run_harness.ts";
