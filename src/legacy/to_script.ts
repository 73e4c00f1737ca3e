/**
 * The translation of a version-1 chain into the equivalent version-2 workflow script: readable
 * JavaScript a user can save and run with `svc workflow run`. Nothing of the chain becomes code:
 * every text and option is a literal built by `JSON.stringify` (with invisible characters
 * escaped), placeholders become variables
 * joined with `+`, and the comments hold only step ids (which the format restricts to
 * `[a-z0-9_-]`) and svc's own words.
 * @module
 */
import type { LegacyChain, LegacyStep } from "./chain_schema.ts";
import { parseLegacyChain } from "./parse_chain.ts";
import { splitPrompt } from "./placeholders.ts";

const HEADER = `// A version-2 workflow script, translated by svc from a legacy version-1 chain.
// Version-1 chains are deprecated and will be removed: save this file and run it with
//   svc workflow run <this file> --args '{"input": "..."}'
// Each step is one agent() call, strictly in order. {{input}} is the variable \`input\`
// (args.input as text) and {{steps.<id>.output}} the variable of that step's output: its text,
// or the JSON text of a schema step's object. A step whose call returns null (it failed, or was
// refused for the budget or the agent limit) stops the run with an error naming the step.`;

const PRELUDE =
  `/** The chain's input: args.input as text (JSON text when it is no string); args when it is a string. */
function inputOf(value) {
  if (typeof value === "string") return value;
  const input = value !== null && typeof value === "object" ? value.input : undefined;
  if (input === undefined) return "";
  return typeof input === "string" ? input : JSON.stringify(input);
}

/** What each step's agent() call returned, by step id: the run's result lists them. */
const outputs = {};

/** Runs one step's agent() call; its output is the text, or the JSON text of a schema result. */
async function step(id, index, prompt, options) {
  const result = await agent(prompt, options);
  if (result === null) {
    throw new Error(
      \`step '\${id}' (steps[\${index}]) got no result: its agent() call failed or was refused \` +
        "(the run's failures and narration say why)",
    );
  }
  outputs[id] = result;
  return typeof result === "string" ? result : JSON.stringify(result);
}

const input = inputOf(args);`;

/**
 * Characters a string literal keeps raw that would mislead a reader of the script: C1 controls,
 * the bidirectional overrides and isolates ("Trojan Source") and the line separators.
 */
const INVISIBLE = /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A value as a JavaScript literal: JSON (which JavaScript reads as the same value), with the
 * characters that could mislead a reader written as `\u` escapes, which denote the same ones.
 */
function literal(value: unknown): string {
  return JSON.stringify(value).replace(
    INVISIBLE,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The variable of each step's output: `out_<id>` with `-` as `_`, made unique by the position. */
function variableNames(steps: readonly LegacyStep[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  steps.forEach((step, index) => {
    let name = `out_${step.id.replaceAll("-", "_")}`;
    if (taken.has(name)) name = `${name}_${index + 1}`;
    taken.add(name);
    names.set(step.id, name);
  });
  return names;
}

/** The prompt as an expression: literals and variables joined with `+`. */
function promptExpression(prompt: string, variables: ReadonlyMap<string, string>): string {
  const terms = splitPrompt(prompt).map((part) => {
    switch (part.kind) {
      case "input":
        return "input";
      case "step":
        return variables.get(part.id)!;
      case "text":
        return literal(part.text);
      case "unknown":
        // The chain was validated: no unknown placeholder is left. Kept as text all the same.
        return literal(`{{${part.name}}}`);
    }
  });
  return terms.length === 0 ? '""' : terms.join(" + ");
}

/** The `agent()` options of a step: its own, with its id as the label unless it names one. */
function optionsOf(step: LegacyStep): Record<string, unknown> {
  const { id, prompt: _prompt, ...options } = step;
  return { label: id, ...options };
}

/**
 * The version-2 script equivalent to a chain: one `agent()` call per step in order, returning
 * `{ output, steps }` (the last step's result, and every step's result by id). The chain is
 * validated first, so a value that is no valid chain is refused here too.
 */
export function legacyToScript(chain: LegacyChain): string {
  const valid = parseLegacyChain(chain);
  const variables = variableNames(valid.steps);
  const meta: Record<string, string> = {};
  if (valid.name !== undefined) meta.name = valid.name;
  if (valid.description !== undefined) meta.description = valid.description;
  const lines = [HEADER];
  if (Object.keys(meta).length > 0) lines.push(`export const meta = ${literal(meta)};`);
  lines.push("", PRELUDE);
  let phase: string | undefined;
  valid.steps.forEach((step, index) => {
    lines.push("", `// Step ${index + 1} of ${valid.steps.length}: ${step.id}`);
    if (step.phase !== undefined && step.phase !== phase) {
      lines.push(`phase(${literal(step.phase)});`);
      phase = step.phase;
    }
    const call = `await step(${literal(step.id)}, ${index}, ${
      promptExpression(step.prompt, variables)
    }, ${literal(optionsOf(step))});`;
    lines.push(`const ${variables.get(step.id)!} = ${call}`);
  });
  const last = valid.steps.at(-1)!;
  lines.push("", `return { output: outputs[${literal(last.id)}], steps: outputs };`, "");
  return lines.join("\n");
}
