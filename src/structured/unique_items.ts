/**
 * `uniqueItems` in linear time. ajv's own keyword compares every pair of items whose type the
 * schema leaves open (quadratic: minutes for an answer of 100 000 items); this one keys each
 * item by its canonical JSON (object keys sorted) and charges the work to the meter.
 * @module
 */
import type { JsonValue } from "../schemas/mod.ts";
import { charge } from "./validation_meter.ts";

function canonical(value: JsonValue): string {
  charge(1);
  if (value === null || typeof value !== "object") {
    const text = JSON.stringify(value);
    charge(Math.ceil(text.length / 16));
    return text;
  }
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k]!)}`).join(",")}}`;
}

/** True when no two items of `items` are equal as JSON values. */
export function allUnique(items: JsonValue[]): boolean {
  const seen = new Set<string>();
  for (const item of items) {
    const key = canonical(item);
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}
