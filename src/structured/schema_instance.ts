import { SvcError } from "../errors/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";

type Schema = Record<string, unknown>;

/**
 * What the fake provider builds at most: the schema is the script's, and the instance is
 * built synchronously on the host, so `minLength: 500000000` must not become a string.
 */
export const INSTANCE_LIMITS = {
  /** Characters of one string. */
  maxStringLength: 100_000,
  /** Items of one array. */
  maxItems: 10_000,
  /** Properties of one object. */
  maxProperties: 1_000,
  /** Nesting of the instance (deeper `$ref` chains end in `null`). */
  maxDepth: 32,
  /** Size of the whole instance: characters of its strings plus one per value. */
  maxSize: 1_000_000,
} as const;

function asSchema(value: unknown): Schema | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Schema
    : undefined;
}

function tooLarge(what: string, limit: number): SvcError {
  return new SvcError(
    "provider_failed",
    `Cannot answer with the fake provider: the schema asks for ${what}, over its limit of ${limit}`,
  );
}

/** What one instance has used of {@linkcode INSTANCE_LIMITS}.maxSize. */
interface Budget {
  size: number;
}

function spend(budget: Budget, units: number): void {
  budget.size += units;
  if (budget.size > INSTANCE_LIMITS.maxSize) {
    throw tooLarge(
      "an answer of more than a million characters and values",
      INSTANCE_LIMITS.maxSize,
    );
  }
}

function stringOfLength(seed: string, min: number, max: number | undefined): string {
  if (min > INSTANCE_LIMITS.maxStringLength) {
    throw tooLarge(`a string of at least ${min} characters`, INSTANCE_LIMITS.maxStringLength);
  }
  const unit = seed.length > 0 ? seed : "x";
  const text = min > unit.length ? unit.repeat(Math.ceil(min / unit.length)) : unit;
  return max !== undefined ? text.slice(0, Math.max(max, min)) : text;
}

/**
 * Builds a deterministic instance of a JSON Schema: the first enum or const value, required
 * properties filled in, minimum lengths and bounds honoured. Enough for the fake provider to
 * answer schema calls with values a validator accepts. Throws a provider_failed SvcError when
 * the schema asks for more than {@linkcode INSTANCE_LIMITS}.
 */
export function schemaInstance(schema: unknown, seed = "fake"): JsonValue {
  return build(schema, seed, { root: schema, depth: 0, budget: { size: 0 } });
}

function build(
  schema: unknown,
  seed: string,
  at: { root: unknown; depth: number; budget: Budget },
): JsonValue {
  spend(at.budget, 1);
  const deeper = { ...at, depth: at.depth + 1 };
  if (schema === true || schema === undefined) return leaf(seed, at.budget);
  const s = asSchema(schema);
  if (!s || at.depth > INSTANCE_LIMITS.maxDepth) return null;
  // A value of the schema's own may be used many times over: each use counts in full.
  if ("const" in s) return copied(s.const as JsonValue, at.budget);
  if (Array.isArray(s.enum) && s.enum.length > 0) return copied(s.enum[0] as JsonValue, at.budget);
  if (typeof s.$ref === "string" && s.$ref.startsWith("#/")) {
    let target: unknown = at.root;
    for (const part of s.$ref.slice(2).split("/")) target = asSchema(target)?.[part];
    return build(target, seed, deeper);
  }
  for (const key of ["allOf", "anyOf", "oneOf"]) {
    const list = s[key];
    if (Array.isArray(list) && list.length > 0) {
      if (key !== "allOf" || list.length === 1) return build(list[0], seed, deeper);
      const merged: Schema = {};
      for (const part of list) Object.assign(merged, asSchema(part));
      return build(merged, seed, deeper);
    }
  }
  const type = Array.isArray(s.type)
    ? s.type[0]
    : s.type ?? (s.properties ? "object" : s.items ? "array" : "string");
  switch (type) {
    case "object": {
      const properties = asSchema(s.properties) ?? {};
      const required = Array.isArray(s.required) ? s.required.map(String) : Object.keys(properties);
      if (required.length > INSTANCE_LIMITS.maxProperties) {
        throw tooLarge(
          `an object of ${required.length} properties`,
          INSTANCE_LIMITS.maxProperties,
        );
      }
      const out: Record<string, JsonValue> = {};
      for (const name of required) {
        spend(at.budget, name.length);
        out[name] = build(properties[name] ?? true, name, deeper);
      }
      return out;
    }
    case "array": {
      const min = typeof s.minItems === "number" ? s.minItems : 1;
      if (min > INSTANCE_LIMITS.maxItems) {
        throw tooLarge(`an array of at least ${min} items`, INSTANCE_LIMITS.maxItems);
      }
      return Array.from(
        { length: Math.max(0, Math.ceil(min)) },
        (_, i) => build(s.items ?? true, `${seed}-${i}`, deeper),
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
      return leaf(stringOfLength(seed, min, max), at.budget);
    }
  }
}

function leaf(text: string, budget: Budget): string {
  spend(budget, text.length);
  return text;
}

function copied(value: JsonValue, budget: Budget): JsonValue {
  spend(budget, JSON.stringify(value)?.length ?? 0);
  return value;
}
