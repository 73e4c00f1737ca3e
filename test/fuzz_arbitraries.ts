/**
 * Request generators for the fuzz battery: values that follow a route's JSON Schema (the one
 * its zod schema publishes in the OpenAPI document or a tool's `inputSchema`), and hostile
 * ones (huge, deeply nested, wrong types, odd unicode, control characters, prototype keys),
 * mixed so that most requests get past the first check and reach deeper code.
 */
import fc from "fast-check";

/** A JSON Schema as the documents publish it. */
export type JsonSchema = Record<string, unknown>;

/** Strings that have broken parsers, paths, terminals and shells before. */
const NASTY = [
  "",
  " ",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "../../../../etc/passwd",
  "..%2F..%2Fetc%2Fpasswd",
  "/etc/shadow",
  "C:\\Windows\\system32",
  "\u0000",
  "a\u0000b",
  "\u001b[2J\u001b[31mred",
  "\u001b]8;;http://evil/\u0007link\u001b]8;;\u0007",
  "\r\n\r\nHTTP/1.1 200 OK",
  "\u202e\u2066reversed",
  "\ud800",
  "\udfff\ud800",
  "💥".repeat(40),
  "$(id)",
  "`id`",
  "; rm -rf /",
  "' OR 1=1 --",
  "(a+)+$",
  "((((((((((((((((((((a))))))))))))))))))))*",
  "%s%s%s%n",
  "{{constructor.constructor('return 1')()}}",
  "<script>alert(1)</script>",
  "-1",
  "1e309",
  "NaN",
  "null",
  "true",
  "run_00000000000000000000",
  "task_0000000000000000000",
];

/** A string a hostile caller would send: nasty, random unicode, or very long. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 80 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom("x", "é", "\u0000", "💥", "\n"), fc.nat(70_000))
      .map(([unit, n]) => unit.repeat(n)),
  },
);

/** Numbers at the edges of what JSON and JavaScript hold. */
const hostileNumber = fc.oneof(
  fc.constantFrom(-0, -1, 0.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 53), 1e308, -1e308, 5e-324),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** Arrays or objects nested `depth` deep. */
function nested(depth: number, inObject: boolean): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = inObject ? { a: value } : [value];
  return value;
}

/** A value of any JSON type that no schema expects: wrong types, deep, huge, prototype keys. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 50, max: 3000 }), fc.boolean())
      .map(([depth, inObject]) => nested(depth, inObject)),
  },
  {
    weight: 1,
    arbitrary: fc.array(fc.constantFrom(0, "x", null), { minLength: 1000, maxLength: 20_000 }),
  },
);

/** JSON text that parses into objects with own `__proto__` / `constructor` keys. */
export const prototypeJson: fc.Arbitrary<string> = fc.tuple(
  fc.constantFrom("__proto__", "constructor", "prototype"),
  fc.jsonValue({ maxDepth: 2 }),
  fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
).map(([key, value, rest]) => {
  const inner = JSON.stringify({ polluted: true, isAdmin: true, value });
  const pairs = Object.entries(rest).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  pairs.push(`${JSON.stringify(key)}:${inner}`);
  return `{${pairs.join(",")}}`;
});

/** Resolves a local `$ref` (`#/components/schemas/X`, `#/$defs/X`) against `root`. */
function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  let current = schema;
  for (let i = 0; i < 16 && typeof current.$ref === "string"; i++) {
    const parts = current.$ref.replace(/^#\//, "").split("/");
    let target: unknown = root;
    for (const part of parts) target = (target as Record<string, unknown> | undefined)?.[part];
    current = (target as JsonSchema | undefined) ?? {};
  }
  return current;
}

/**
 * Values that follow `schema` (resolved against `root`), with a hostile value in place of a
 * field now and then (`hostility`, 0 to 1, per field), so that the deeper checks get tested too.
 */
export function fromSchema(
  schema: JsonSchema,
  options: { root: JsonSchema; hostility?: number; depth?: number },
): fc.Arbitrary<unknown> {
  const hostility = options.hostility ?? 0.1;
  const depth = options.depth ?? 0;
  const plain = schemaValue(resolve(schema, options.root), options.root, hostility, depth);
  if (hostility <= 0) return plain;
  const weight = Math.max(1, Math.round(hostility * 100));
  return fc.oneof(
    { weight: 100 - weight, arbitrary: plain },
    { weight, arbitrary: hostileValue },
  );
}

function schemaValue(
  schema: JsonSchema,
  root: JsonSchema,
  hostility: number,
  depth: number,
): fc.Arbitrary<unknown> {
  const inner = (s: unknown) =>
    fromSchema((s ?? {}) as JsonSchema, { root, hostility, depth: depth + 1 });
  if (depth > 6) return fc.jsonValue({ maxDepth: 1 });
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
  for (const key of ["anyOf", "oneOf"] as const) {
    const list = schema[key];
    if (Array.isArray(list) && list.length > 0) return fc.oneof(...list.map(inner));
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return inner(schema.allOf[0]);
  const type = schema.type;
  if (Array.isArray(type)) {
    return fc.oneof(
      ...type.map((t) => schemaValue({ ...schema, type: t }, root, hostility, depth)),
    );
  }
  switch (type) {
    case "string": {
      const min = typeof schema.minLength === "number" ? schema.minLength : 0;
      const max = typeof schema.maxLength === "number" ? Math.min(schema.maxLength, 200) : 60;
      const fitting = typeof schema.pattern === "string"
        ? patterned(schema.pattern, max)
        : fc.string({ minLength: Math.min(min, max), maxLength: Math.max(min, max) });
      if (schema.format === "date-time") {
        return fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fitting);
      }
      return fitting;
    }
    case "integer": {
      const min = typeof schema.minimum === "number" ? schema.minimum : -1000;
      const max = typeof schema.maximum === "number" ? schema.maximum : 100_000;
      return fc.integer({
        min: Math.max(Math.ceil(min), Number.MIN_SAFE_INTEGER),
        max: Math.min(Math.floor(max), Number.MAX_SAFE_INTEGER),
      });
    }
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : -1000;
      const max = typeof schema.maximum === "number" ? schema.maximum : 100_000;
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
    }
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const max = typeof schema.maxItems === "number" ? Math.min(schema.maxItems, 6) : 4;
      const min = typeof schema.minItems === "number" ? Math.min(schema.minItems, max) : 0;
      return fc.array(inner(schema.items), { minLength: min, maxLength: max });
    }
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, unknown>;
      const names = Object.keys(properties);
      if (names.length === 0) {
        return fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), {
          maxKeys: 4,
        });
      }
      const required = Array.isArray(schema.required) ? schema.required as string[] : [];
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const name of names) record[name] = inner(properties[name]);
      return fc.record(record, { requiredKeys: required.filter((r) => names.includes(r)) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Strings matching a schema's `pattern` (fast-check reads the regular expression). */
function patterned(pattern: string, max: number): fc.Arbitrary<string> {
  try {
    const matching = fc.stringMatching(new RegExp(pattern)).filter((s) => s.length <= max);
    return fc.oneof({ weight: 9, arbitrary: matching }, { weight: 1, arbitrary: fc.string() });
  } catch {
    return fc.string({ maxLength: max });
  }
}

/** A path segment: one of `known` (ids that exist), a plausible id, or a hostile string. */
export function pathId(known: readonly string[]): fc.Arbitrary<string> {
  const options: fc.Arbitrary<string>[] = [
    fc.stringMatching(/^(run|task|ses|card|auto)_[0-9a-z]{1,26}$/),
    hostileString.filter((s) => s.length > 0 && s.length < 4000),
  ];
  if (known.length > 0) options.push(fc.constantFrom(...known));
  return fc.oneof(...options);
}
