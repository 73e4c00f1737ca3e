import { SvcError } from "../errors/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { toBytes } from "./json_bytes.ts";

/**
 * The most bytes a run's record may take as one KV value. Deno KV refuses values over 64 KiB;
 * the rest is room for the key and the small wrapper a document adds.
 */
export const VALUE_LIMIT = 60 * 1024;

/** Strings are never clipped below this, so that a clipped record still says what it was. */
const MIN_STRING = 64;
/** Arrays are never cut below this many items. */
const MIN_ITEMS = 1;

type Json = JsonValue;

/**
 * A record (status, journal entry, event, narration) as JSON that fits in `limit` bytes. A
 * record over it gets its longest strings clipped, then its longest arrays cut, until it fits:
 * whatever a script puts into a record, the record can be written. The engine bounds its fields
 * at the source already; this is the guarantee underneath. Returns the value as it will be
 * stored, and its size.
 */
export function fitRecord<T>(
  value: T,
  limit: number = VALUE_LIMIT,
): { value: T; bytes: Uint8Array } {
  const encoded = toBytes(value);
  if (encoded.length <= limit) return { value, bytes: encoded };
  // A copy through JSON: the caller's object stays whole, and undefined fields drop as they would.
  let copy = JSON.parse(new TextDecoder().decode(encoded)) as Json;
  let bytes = encoded;
  for (let cap = stringCap(copy, bytes.length - limit); bytes.length > limit;) {
    copy = clipStrings(copy, cap);
    bytes = toBytes(copy);
    if (cap === MIN_STRING) break;
    cap = Math.max(
      MIN_STRING,
      Math.min(Math.floor(cap / 2), stringCap(copy, bytes.length - limit)),
    );
  }
  for (let cap = longestArray(copy); bytes.length > limit && cap > MIN_ITEMS;) {
    cap = Math.max(MIN_ITEMS, Math.floor(cap / 2));
    copy = cutArrays(copy, cap);
    bytes = toBytes(copy);
  }
  if (bytes.length > limit) {
    throw new SvcError(
      "internal",
      `Cannot record a value of ${bytes.length} bytes: it does not fit in ${limit} bytes even clipped`,
    );
  }
  return { value: copy as T, bytes };
}

/** Cuts a text to `max` characters, saying how much was cut. Never splits a surrogate pair. */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}… [${text.length - end} more characters]`;
}

/**
 * The length to clip strings to so that at least `excess` characters go: the level that the
 * longest strings are cut down to. Every character is at least one byte of JSON, so cutting
 * `excess` characters (plus the notes that say so) removes at least `excess` bytes.
 */
function stringCap(value: Json, excess: number): number {
  const lengths: number[] = [];
  walkStrings(value, (s) => lengths.push(s.length));
  lengths.sort((a, b) => b - a);
  // Each clipped string gains a note of about 30 characters.
  let removed = 0;
  for (let i = 0; i < lengths.length; i++) {
    const next = lengths[i + 1] ?? 0;
    removed += (i + 1) * (lengths[i]! - next);
    const need = excess + (i + 1) * 32;
    if (removed >= need) return Math.max(MIN_STRING, next + Math.floor((removed - need) / (i + 1)));
  }
  return MIN_STRING;
}

function walkStrings(value: Json, visit: (s: string) => void): void {
  if (typeof value === "string") visit(value);
  else if (Array.isArray(value)) { for (const item of value) walkStrings(item, visit); }
  else if (value !== null && typeof value === "object") {
    for (const item of Object.values(value)) walkStrings(item, visit);
  }
}

/** Clips every string of a JSON value to `cap` characters (object keys stay). */
export function clipStrings(value: JsonValue, cap: number): JsonValue {
  if (typeof value === "string") return clipText(value, cap);
  if (Array.isArray(value)) return value.map((item) => clipStrings(item, cap));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clipStrings(v, cap)]));
  }
  return value;
}

function longestArray(value: Json): number {
  let longest = Array.isArray(value) ? value.length : 0;
  if (value !== null && typeof value === "object") {
    for (const item of Object.values(value)) longest = Math.max(longest, longestArray(item));
  }
  return longest;
}

function cutArrays(value: Json, cap: number): Json {
  if (Array.isArray(value)) return value.slice(0, cap).map((item) => cutArrays(item, cap));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutArrays(v, cap)]));
  }
  return value;
}
