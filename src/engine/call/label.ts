import type { AgentCall } from "../../schemas/mod.ts";

/** Most characters of a label taken from the prompt: what Claude Code's Workflow tool shows. */
export const PROMPT_LABEL_CHARS = 60;

/**
 * The label of a call: its `label` option, else the start of its prompt with every run of
 * whitespace as one space, as Claude Code labels a call without one, so that the journal, the
 * narration and the page name every call; null only for an empty prompt without a label.
 */
export function callLabel(call: AgentCall): string | null {
  if (call.options.label !== undefined) return call.options.label;
  const start = call.prompt.replace(/\s+/g, " ").trim().slice(0, PROMPT_LABEL_CHARS);
  return start === "" ? null : start;
}
