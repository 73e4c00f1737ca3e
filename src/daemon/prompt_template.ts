import type { JsonValue } from "../schemas/mod.ts";

/** Longest text one `{{payload...}}` field puts into a prompt. */
export const FIELD_LIMIT = 4096;
/** Longest rendered prompt (a dispatch's limit). */
export const PROMPT_LIMIT = 32 * 1024;

/** Walks `payload` along `path`, own properties only: a hostile payload's `__proto__` is data. */
function field(payload: JsonValue, path: readonly string[]): JsonValue | undefined {
  let at: JsonValue | undefined = payload;
  for (const key of path) {
    if (at === null || typeof at !== "object") return undefined;
    if (Array.isArray(at)) {
      if (!/^\d{1,6}$/.test(key)) return undefined;
      at = at[Number(key)];
    } else {
      at = Object.hasOwn(at, key) ? at[key] : undefined;
    }
  }
  return at;
}

function text(value: JsonValue | undefined): string {
  if (value === undefined || value === null) return "";
  const shown = typeof value === "string" ? value : JSON.stringify(value);
  return shown.length > FIELD_LIMIT ? `${shown.slice(0, FIELD_LIMIT)}…` : shown;
}

/**
 * Renders a hook's prompt template (configuration, trusted) over a delivery's payload (hostile):
 * `{{payload}}` is the whole payload as JSON, `{{payload.a.b.0}}` a field of it (empty when
 * absent). Each field is clipped to {@linkcode FIELD_LIMIT} characters, the prompt to
 * {@linkcode PROMPT_LIMIT}; the payload's text is never read as a template.
 */
export function renderPrompt(template: string, payload: JsonValue): string {
  const out = template.replace(
    /\{\{\s*payload((?:\.[A-Za-z0-9_-]{1,64}){0,16})\s*\}\}/g,
    (_match, path: string) => text(field(payload, path.split(".").filter(Boolean))),
  );
  return out.length > PROMPT_LIMIT ? `${out.slice(0, PROMPT_LIMIT - 1)}…` : out;
}
