/**
 * The version-1 chain format: a name, a description and a linear list of steps, each a prompt
 * with plain-text placeholders and the `agent()` options of its one call. Strict: an unknown
 * key is refused, so a typo is an error rather than a silently ignored wish.
 * @module
 */
import * as z from "zod";
import { type AgentOptions, AgentOptionsSchema } from "../schemas/mod.ts";
import type { Assert, SameType } from "../schemas/mod.ts";
import { splitPrompt } from "./placeholders.ts";

/** The most steps a chain may have. */
export const MAX_LEGACY_STEPS = 50;
/** The longest prompt of one step, in characters (before its placeholders are filled in). */
export const MAX_LEGACY_PROMPT_CHARS = 64 * 1024;
/** The longest chain name, in characters. */
export const MAX_LEGACY_NAME_CHARS = 128;
/** The longest chain description, in characters. */
export const MAX_LEGACY_DESCRIPTION_CHARS = 4096;

/** A step id: lower-case letter first, then lower-case letters, digits, `_` and `-`; 64 at most. */
const STEP_ID = /^[a-z][a-z0-9_-]{0,63}$/;
// deno-lint-ignore no-control-regex -- refusing control characters is the point
const NO_CONTROL = /^[^\x00-\x1f\x7f]*$/;

const stepSchema = z.strictObject({
  id: z.string().regex(
    STEP_ID,
    "must be a lower-case letter, then up to 63 lower-case letters, digits, '_' or '-'",
  ),
  prompt: z.string().min(1, "must not be empty").max(
    MAX_LEGACY_PROMPT_CHARS,
    `must be at most ${MAX_LEGACY_PROMPT_CHARS} characters`,
  ),
  // Every option of agent(): each step is one call, and each option means the same there.
  ...AgentOptionsSchema.shape,
});

const chainSchema = z.strictObject({
  version: z.literal(1, {
    error: "must be 1 (a version-2 workflow is a script: run it with svc workflow run)",
  }),
  name: z.string().min(1, "must not be empty").max(
    MAX_LEGACY_NAME_CHARS,
    `must be at most ${MAX_LEGACY_NAME_CHARS} characters`,
  ).regex(NO_CONTROL, "must not contain control characters").optional(),
  description: z.string().max(
    MAX_LEGACY_DESCRIPTION_CHARS,
    `must be at most ${MAX_LEGACY_DESCRIPTION_CHARS} characters`,
  ).optional(),
  steps: z.array(stepSchema).min(1, "must have at least one step").max(
    MAX_LEGACY_STEPS,
    `must have at most ${MAX_LEGACY_STEPS} steps`,
  ),
}).superRefine((chain, ctx) => {
  const seen = new Set<string>();
  chain.steps.forEach((step, index) => {
    if (seen.has(step.id)) {
      ctx.addIssue({
        code: "custom",
        path: ["steps", index, "id"],
        message: `repeats '${step.id}': step ids must be unique`,
      });
    }
    if (step.schema !== undefined && step.schema_id !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["steps", index, "schema_id"],
        message: "must not be given with 'schema': pass one of them",
      });
    }
    for (const part of splitPrompt(step.prompt)) {
      if (part.kind === "unknown") {
        ctx.addIssue({
          code: "custom",
          path: ["steps", index, "prompt"],
          message: `names {{${clip(part.name)}}}, which is no placeholder: use {{input}} or ` +
            "{{steps.<id>.output}}",
        });
      } else if (part.kind === "step" && !seen.has(part.id)) {
        ctx.addIssue({
          code: "custom",
          path: ["steps", index, "prompt"],
          message: `names {{steps.${part.id}.output}}, which is no earlier step`,
        });
      }
    }
    seen.add(step.id);
  });
});

function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}...` : text;
}

/**
 * One step of a version-1 chain: its id, its prompt (with `{{input}}` and
 * `{{steps.<id>.output}}` placeholders) and the options of its `agent()` call.
 */
export interface LegacyStep extends AgentOptions {
  /** Unique within the chain; later prompts name the step's output with it. */
  id: string;
  /** The prompt, placeholders in plain text. */
  prompt: string;
}

/** A version-1 workflow: a static linear chain of steps, run strictly in order. */
export interface LegacyChain {
  /** Always 1. */
  version: 1;
  /** A short name: the run's name. */
  name?: string;
  /** What the chain does. */
  description?: string;
  /** The steps, in the order they run. */
  steps: LegacyStep[];
}
type _LegacyChainMatches = Assert<SameType<LegacyChain, z.infer<typeof chainSchema>>>;

/**
 * The zod schema of a version-1 chain, with every check: unknown keys, unique ids, and
 * placeholders that name only `input` or an earlier step.
 */
export const LegacyChainSchema: z.ZodType<LegacyChain> = chainSchema;

/** The chain format as a JSON Schema (the checks across steps are not expressible there). */
export const LEGACY_CHAIN_JSON_SCHEMA: Record<string, unknown> = z.toJSONSchema(chainSchema, {
  io: "input",
  unrepresentable: "any",
}) as Record<string, unknown>;
