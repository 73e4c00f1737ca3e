/**
 * Reading the untyped JSON of a request body: each accessor answers an empty value of its type
 * where the body holds something else, so a format reads what a client sent without a schema.
 * @module
 */

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Whether `value` is a JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` when it is an object, else `{}`. */
export function record(value: unknown): Json {
  return isRecord(value) ? value : {};
}

/** `value` when it is an array, else `[]`. */
export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** `value` when it is a string, else `""`. */
export function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The text of a message's content: a string, or the `text` of its parts, joined by newlines. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  return list(content).map((part) => str(record(part).text)).filter((t) => t !== "").join("\n");
}
