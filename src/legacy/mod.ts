/**
 * The legacy version-1 workflow engine (deprecated): a static linear chain of steps in a YAML
 * or JSON file, run by translating it into the equivalent version-2 script, so that a chain's
 * run is an ordinary run (journal, resume, budget, limits, events, status).
 * @module
 */
export {
  LEGACY_CHAIN_JSON_SCHEMA,
  type LegacyChain,
  LegacyChainSchema,
  type LegacyStep,
  MAX_LEGACY_DESCRIPTION_CHARS,
  MAX_LEGACY_NAME_CHARS,
  MAX_LEGACY_PROMPT_CHARS,
  MAX_LEGACY_STEPS,
} from "./chain_schema.ts";
export {
  MAX_LEGACY_CHAIN_BYTES,
  parseLegacyChain,
  type ParseLegacyChainOptions,
} from "./parse_chain.ts";
export { type PromptPart, splitPrompt } from "./placeholders.ts";
export {
  LEGACY_DEPRECATION,
  type LegacyRunRequest,
  legacyRunRequest,
  type LegacyRunRequestOptions,
  type LegacyWorkflowBody,
  LegacyWorkflowBodySchema,
  MAX_LEGACY_INPUT_CHARS,
} from "./run_request.ts";
export { legacyToScript } from "./to_script.ts";
