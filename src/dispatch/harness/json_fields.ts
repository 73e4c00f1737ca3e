/** A parsed JSON object whose fields are not trusted yet. */
export type JsonRecord = Record<string, unknown>;

/** Whether a value is a JSON object (not an array, not null). */
export function isRecord(value: unknown): value is JsonRecord {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Parses one line of a tool's JSON-lines output. Blank lines are `null` (nothing to count);
 * anything that is not a JSON object is `undefined` (a malformed line).
 */
export function parseJsonLine(text: string): JsonRecord | null | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The object at `key`, if it is one. */
export function field(value: unknown, key: string): JsonRecord | undefined {
  if (!isRecord(value)) return undefined;
  const inner = value[key];
  return isRecord(inner) ? inner : undefined;
}

/** The string at `key`, if it is one. */
export function text(value: unknown, key: string): string | undefined {
  if (!isRecord(value)) return undefined;
  const inner = value[key];
  return typeof inner === "string" ? inner : undefined;
}

/** The finite number at `key`, if it is one. */
export function count(value: unknown, key: string): number | undefined {
  if (!isRecord(value)) return undefined;
  const inner = value[key];
  return typeof inner === "number" && Number.isFinite(inner) ? inner : undefined;
}

/** The non-negative token count at `key`; 0 when absent or not a count. */
export function tokens(value: unknown, key: string): number {
  const n = count(value, key);
  return n !== undefined && n > 0 ? n : 0;
}
