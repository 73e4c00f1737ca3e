import type { JsonValue } from "../schemas/mod.ts";

type Schema = Record<string, unknown>;

function asSchema(value: unknown): Schema | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Schema
    : undefined;
}

function stringOfLength(seed: string, min: number, max: number | undefined): string {
  let text = seed;
  while (text.length < min) text += seed;
  return max !== undefined ? text.slice(0, Math.max(max, min)) : text;
}

/**
 * Builds a deterministic instance of a JSON Schema: the first enum or const value, required
 * properties filled in, minimum lengths and bounds honoured. Enough for the fake provider to
 * answer schema calls with values a validator accepts.
 */
export function schemaInstance(
  schema: unknown,
  seed = "fake",
  root: unknown = schema,
  depth = 0,
): JsonValue {
  if (schema === true || schema === undefined) return seed;
  const s = asSchema(schema);
  if (!s || depth > 32) return null;
  if ("const" in s) return s.const as JsonValue;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0] as JsonValue;
  if (typeof s.$ref === "string" && s.$ref.startsWith("#/")) {
    let target: unknown = root;
    for (const part of s.$ref.slice(2).split("/")) target = asSchema(target)?.[part];
    return schemaInstance(target, seed, root, depth + 1);
  }
  for (const key of ["allOf", "anyOf", "oneOf"]) {
    const list = s[key];
    if (Array.isArray(list) && list.length > 0) {
      if (key !== "allOf" || list.length === 1) {
        return schemaInstance(list[0], seed, root, depth + 1);
      }
      const merged: Schema = {};
      for (const part of list) Object.assign(merged, asSchema(part));
      return schemaInstance(merged, seed, root, depth + 1);
    }
  }
  const type = Array.isArray(s.type)
    ? s.type[0]
    : s.type ?? (s.properties ? "object" : s.items ? "array" : "string");
  switch (type) {
    case "object": {
      const properties = asSchema(s.properties) ?? {};
      const required = Array.isArray(s.required) ? s.required.map(String) : Object.keys(properties);
      const out: Record<string, JsonValue> = {};
      for (const name of required) {
        out[name] = schemaInstance(properties[name] ?? true, name, root, depth + 1);
      }
      return out;
    }
    case "array": {
      const min = typeof s.minItems === "number" ? s.minItems : 1;
      return Array.from(
        { length: min },
        (_, i) => schemaInstance(s.items ?? true, `${seed}-${i}`, root, depth + 1),
      );
    }
    case "integer":
    case "number": {
      const min = typeof s.minimum === "number"
        ? s.minimum
        : typeof s.exclusiveMinimum === "number"
        ? s.exclusiveMinimum + 1
        : 0;
      const value = type === "integer" ? Math.ceil(min) : min;
      return typeof s.maximum === "number" ? Math.min(value, s.maximum) : value;
    }
    case "boolean":
      return true;
    case "null":
      return null;
    default: {
      const min = typeof s.minLength === "number" ? s.minLength : 0;
      const max = typeof s.maxLength === "number" ? s.maxLength : undefined;
      return stringOfLength(seed, min, max);
    }
  }
}
