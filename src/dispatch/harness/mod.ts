/**
 * Harness providers: each drives a coding agent's command line non-interactively and reads its
 * structured output (docs/PROVIDERS.md).
 * @module
 */
export { CLAUDE, claudeProvider } from "./claude.ts";
export { CODEX, codexProvider } from "./codex.ts";
export { codexHelperReport } from "./codex_helper.ts";
export type { CodexHelperReport } from "./codex_helper.ts";
export { GEMINI, geminiProvider } from "./gemini.ts";
export { OPENCODE, opencodeProvider } from "./opencode.ts";
export { ARG_VALUE_LIMIT, checkArgValue } from "./arg_values.ts";
export { HARNESS_BASE_ENV, HARNESS_KEY_ENV, harnessEnv, LOCALE_ENV } from "./harness_env.ts";
export type { HarnessEnv } from "./harness_env.ts";
export { CALL_DIR_PREFIX, workingDir } from "./scratch.ts";
export type { WorkingDir } from "./scratch.ts";
export {
  createHarnessProvider,
  DEFAULT_HARNESS_TIMEOUT_MS,
  PROBE_CALL_WAIT_MS,
  PROBE_TIMEOUT_MS,
  probeToolVersion,
  redact,
  toolMessage,
} from "./run_harness.ts";
export { ProbeCache, TOOL_PROBES } from "./probe_cache.ts";
export type { ProbeCacheOptions, ToolProbe, VersionOutcome } from "./probe_cache.ts";
export { stripTerminalCodes } from "./terminal_codes.ts";
export { TESTED_VERSIONS } from "./tested_versions.ts";
export type { TestedTool } from "./tested_versions.ts";
export type {
  HarnessAnswer,
  HarnessCall,
  HarnessOptions,
  HarnessReport,
  HarnessTool,
  OutputReader,
  ToolVersionOptions,
} from "./run_harness.ts";
