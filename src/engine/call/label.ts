import { redactSecrets } from "../../dispatch/mod.ts";
import type { AgentCall } from "../../schemas/mod.ts";

/** Most characters of a label taken from the prompt: what Claude Code's Workflow tool shows. */
export const PROMPT_LABEL_CHARS = 60;

/** Characters of the prompt read for its label: enough for a credential to be seen whole. */
const PROMPT_READ_CHARS = 1024;

/** Labels taken from prompts, by call: a call's request is never changed once checked. */
const promptLabels = new WeakMap<AgentCall, { label: string | null }>();

/**
 * The text a call's default label comes from, as Claude Code picks it: the prompt after its
 * `sharedHeadLength` characters, so that sibling calls sharing a long head are told apart, or
 * the whole prompt when nothing but whitespace follows the head.
 */
function labelSource(call: AgentCall): string {
  const head = call.options.sharedHeadLength ?? 0;
  const tail = call.prompt.slice(head);
  return /\S/.test(tail) ? tail : call.prompt;
}

/**
 * The label of a call: its `label` option, else the start of its prompt (after its shared head)
 * with every run of whitespace as one space, as Claude Code labels a call without one, so that
 * the journal, the narration and the page name every call; null only for an empty prompt
 * without a label. What looks like a credential in that start is redacted before it is cut, so
 * that a token cut in half is still recognised.
 */
export function callLabel(call: AgentCall): string | null {
  if (call.options.label !== undefined) return call.options.label;
  // A call's stages (its start, an approval, its entry) each name it: its redaction runs once.
  const known = promptLabels.get(call);
  if (known !== undefined) return known.label;
  const start = redactSecrets(labelSource(call).slice(0, PROMPT_READ_CHARS).replace(/\s+/g, " "))
    .trim().slice(0, PROMPT_LABEL_CHARS);
  const label = start === "" ? null : start;
  promptLabels.set(call, { label });
  return label;
}
