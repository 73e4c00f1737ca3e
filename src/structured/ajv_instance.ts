/**
 * The ajv instance of a schema registry and how a schema is compiled with it. Loaded by
 * `structured_output.ts` at the first schema a registry compiles, so that ajv and re2js (some
 * milliseconds to load, and more to set an instance up) stay out of runs that use no schema.
 * @module
 */
import { Ajv, type ValidateFunction } from "ajv";
import { compilingSchema, safeRegExp } from "./safe_regexp.ts";
import { METER_KEYWORD } from "./schema_limits.ts";
import { allUnique } from "./unique_items.ts";
import { charge, directSize } from "./validation_meter.ts";
import type { JsonValue } from "../schemas/mod.ts";

/**
 * The validator every registry uses. Nothing a script's schema holds runs unbounded on the
 * host: patterns go to re2js, references are never inlined (a `$ref` used a thousand times is
 * compiled once), `uniqueItems` is linear, and every schema node charges the work meter.
 */
export function createAjv(): Ajv {
  const regExp = Object.assign(
    (pattern: string, flags: string) => safeRegExp(pattern, flags),
    { code: "safeRegExp" },
  );
  const ajv = new Ajv({
    strict: false,
    // With allErrors: false ajv nests every next check inside the previous one: compiling
    // costs quadratic time in a node's subschemas, and a thousand overflow V8's parser.
    allErrors: true,
    inlineRefs: false,
    // Unknown formats would be logged with the script's text; they are ignored either way.
    logger: false,
    code: { regExp },
  });
  ajv.addKeyword({
    keyword: METER_KEYWORD,
    schemaType: "number",
    errors: false,
    // First in the group every schema runs, so that a node is paid for before it does anything.
    before: "$comment",
    validate(weight: number, data: unknown) {
      charge(weight + directSize(data));
      return true;
    },
  });
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword({
    keyword: "uniqueItems",
    type: "array",
    schemaType: "boolean",
    error: { message: "must NOT have duplicate items" },
    validate: (unique: boolean, data: JsonValue[]) => !unique || allUnique(data),
  });
  return ajv;
}

/**
 * Compiles a prepared (metered) schema with `ajv`, its patterns within one schema's budget.
 * Throws what ajv or the pattern compiler throws. Leaves nothing in ajv's own cache, which
 * would grow with every schema: the validator keeps what it needs.
 */
export function compileMetered(
  ajv: Ajv,
  schema: Record<string, unknown> | boolean,
): ValidateFunction {
  try {
    return compilingSchema(() => ajv.compile(schema));
  } finally {
    ajv.removeSchema(schema);
  }
}
