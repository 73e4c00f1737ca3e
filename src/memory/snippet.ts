/** Characters of a snippet. */
export const SNIPPET_LENGTH = 160;

/**
 * A short excerpt of `text` around the first place one of `terms` (lower-case, as the index
 * keeps them) occurs, whitespace and control characters folded into single spaces, so that it
 * prints on one line. Plain substring search: terms never reach a regular expression.
 */
export function snippetOf(text: string, terms: readonly string[]): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const term of terms) {
    const found = term === "" ? -1 : lower.indexOf(term);
    if (found >= 0 && (at < 0 || found < at)) at = found;
  }
  const start = Math.max(0, at < 0 ? 0 : at - SNIPPET_LENGTH / 4);
  const end = Math.min(text.length, start + SNIPPET_LENGTH);
  // deno-lint-ignore no-control-regex -- folding control characters is the point
  const body = text.slice(start, end).replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return `${start > 0 ? "…" : ""}${body}${end < text.length ? "…" : ""}`;
}
