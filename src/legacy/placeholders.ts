/**
 * The placeholders of a version-1 prompt: `{{input}}` and `{{steps.<id>.output}}`, plain text
 * substituted in order. A prompt is split into literal text and placeholders once, here; the
 * checks and the translation read the parts.
 * @module
 */

/** One part of a prompt: literal text, the chain's input, or an earlier step's output. */
export type PromptPart =
  | { kind: "text"; text: string }
  | { kind: "input" }
  | { kind: "step"; id: string }
  | {
    /** A `{{word}}` that is no placeholder: refused, so that a typo is caught. */
    kind: "unknown";
    /** What stood between the braces, trimmed. */
    name: string;
  };

/** What may stand between `{{` and `}}` and count as an attempt at a placeholder. */
const WORD = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/** The longest text between the braces that is read as a placeholder. */
const MAX_INNER = 256;
const STEP_REF = /^steps\.([a-z][a-z0-9_-]{0,63})\.output$/;

/**
 * Splits a prompt into parts. `{{ word }}` (letters, digits, `_`, `.`, `-`; spaces around it
 * allowed) is a placeholder, known or not; anything else in braces (`{{#each}}`, `{{ a b }}`)
 * stays text. Linear in the prompt's length: no regular expression runs over the whole text.
 */
export function splitPrompt(prompt: string): PromptPart[] {
  const parts: PromptPart[] = [];
  let text = "";
  let pos = 0;
  // The next "}}" at or after a position: found once and reused while it lies ahead.
  let close = -1;
  while (pos < prompt.length) {
    const open = prompt.indexOf("{{", pos);
    if (open < 0) break;
    if (close < open + 2) close = prompt.indexOf("}}", open + 2);
    if (close < 0) break;
    // A long span between the braces is text: slicing it for every "{{" would be quadratic.
    const inner = close - open - 2 <= MAX_INNER ? prompt.slice(open + 2, close).trim() : "";
    const part = WORD.test(inner) ? placeholderOf(inner) : undefined;
    if (part === undefined) {
      text += prompt.slice(pos, open + 1);
      pos = open + 1;
      continue;
    }
    text += prompt.slice(pos, open);
    if (text !== "") parts.push({ kind: "text", text });
    text = "";
    parts.push(part);
    pos = close + 2;
  }
  text += prompt.slice(pos);
  if (text !== "") parts.push({ kind: "text", text });
  return parts;
}

function placeholderOf(inner: string): PromptPart {
  if (inner === "input") return { kind: "input" };
  const step = STEP_REF.exec(inner);
  if (step) return { kind: "step", id: step[1]! };
  return { kind: "unknown", name: inner };
}
