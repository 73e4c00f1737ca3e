/**
 * The limits on a schema's regular expressions, apart from the module that compiles them
 * (`safe_regexp.ts`, with re2js), which loads only when a run first compiles a schema.
 * @module
 */

/** Limits on a schema's patterns (re2js compiles them: `safe_regexp.ts`). */
export const PATTERN_LIMITS = {
  /** Characters of one pattern. */
  maxLength: 512,
  /** re2 instructions of one compiled pattern (`x{1000}` is a thousand of them). */
  maxProgram: 10_000,
  /** re2 instructions of all patterns of one schema together. */
  maxSchemaProgram: 50_000,
} as const;
