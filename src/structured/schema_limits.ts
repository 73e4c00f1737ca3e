/**
 * What a script's JSON Schema may be, checked before ajv sees it, and the metered copy ajv
 * compiles: every schema node of the copy carries a {@linkcode METER_KEYWORD} with the cost of
 * evaluating it once, so that validation work is bounded (see validation_meter.ts).
 * @module
 */
import { SchemaError } from "./schema_error.ts";

/** Limits on one schema. */
export const SCHEMA_LIMITS = {
  /** Bytes of the schema as JSON (UTF-8). */
  maxBytes: 64 * 1024,
  /** Nesting of objects and arrays in the schema. */
  maxDepth: 32,
  /** Schema nodes (objects in subschema positions): ajv's compile time grows with them. */
  maxNodes: 1000,
} as const;

/** The keyword ajv meters schema nodes with; its value is the node's cost per evaluation. */
export const METER_KEYWORD = "x-svc-meter";

/** Keywords whose value is one subschema (draft-07, as ajv's default class knows it). */
const ONE = new Set([
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "additionalProperties",
  "additionalItems",
  "items",
]);
/** Keywords whose value is a list of subschemas (`items` may be either). */
const LIST = new Set(["allOf", "anyOf", "oneOf", "items"]);
/** Keywords whose value maps names to subschemas (`dependencies` also to name lists). */
const MAP = new Set(["properties", "patternProperties", "definitions", "$defs", "dependencies"]);

/** Every keyword that holds subschemas, for the test that ajv knows no other. */
export const SUBSCHEMA_KEYWORDS: ReadonlySet<string> = new Set([...ONE, ...LIST, ...MAP]);

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A schema checked against the limits: its canonical text and the copy ajv compiles. */
export interface PreparedSchema {
  /** The schema as JSON, the key of compiled schemas. */
  text: string;
  /** A copy with every schema node metered. */
  metered: Node | boolean;
}

/** Throws SchemaError when `value` nests deeper than the limit; iterative, any depth is safe. */
function checkDepth(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (depth > SCHEMA_LIMITS.maxDepth) {
      throw new SchemaError(
        `agent(): option 'schema' nests deeper than ${SCHEMA_LIMITS.maxDepth} levels`,
      );
    }
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
}

function unescapePointer(part: string): string {
  return part.replaceAll("~1", "/").replaceAll("~0", "~");
}

/**
 * Checks `schema` against {@linkcode SCHEMA_LIMITS} and makes its metered copy. `$ref` must be
 * a local JSON pointer (`#` or `#/...`) to a schema node, and `$id` may appear only at the
 * root: a reference the meter could not follow would let validation run unmetered.
 */
export function prepareSchema(schema: Node | boolean): PreparedSchema {
  checkDepth(schema);
  const text = JSON.stringify(schema);
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > SCHEMA_LIMITS.maxBytes) {
    throw new SchemaError(
      `agent(): option 'schema' is ${bytes} bytes as JSON, over the limit of ${SCHEMA_LIMITS.maxBytes}`,
    );
  }
  const metered = JSON.parse(text) as Node | boolean;
  if (typeof metered === "boolean") return { text, metered };
  const nodes = new Set<Node>();
  const refs: string[] = [];
  const visit = (node: unknown, root: boolean): void => {
    if (!isNode(node) || nodes.has(node)) return;
    nodes.add(node);
    if (nodes.size > SCHEMA_LIMITS.maxNodes) {
      throw new SchemaError(
        `agent(): option 'schema' has more than ${SCHEMA_LIMITS.maxNodes} subschemas`,
      );
    }
    if (typeof node.$ref === "string") refs.push(node.$ref);
    else if (node.$ref !== undefined) {
      throw new SchemaError("agent(): option 'schema' has a $ref that is not a string");
    }
    if (!root && node.$id !== undefined) {
      throw new SchemaError(
        "agent(): option 'schema' has an $id below its root: only the root may have one",
      );
    }
    const own = JSON.stringify(node).length;
    for (const [key, value] of Object.entries(node)) {
      if (LIST.has(key) && Array.isArray(value)) value.forEach((item) => visit(item, false));
      else if (ONE.has(key)) visit(value, false);
      else if (MAP.has(key) && isNode(value)) {
        for (const item of Object.values(value)) visit(item, false);
      }
    }
    // A node's own checks (an enum, the names of its properties) cost up to its size.
    node[METER_KEYWORD] = 1 + Math.ceil(own / 64);
  };
  visit(metered, true);
  for (const ref of refs) {
    if (ref !== "#" && !ref.startsWith("#/")) {
      throw new SchemaError(
        `agent(): option 'schema' has $ref ${
          JSON.stringify(ref.slice(0, 80))
        }: only local references ('#/...') are supported`,
      );
    }
    let target: unknown = metered;
    for (const part of ref === "#" ? [] : ref.slice(2).split("/")) {
      let key: string;
      try {
        key = unescapePointer(decodeURIComponent(part));
      } catch {
        key = part;
      }
      target = target !== null && typeof target === "object" && Object.hasOwn(target, key)
        ? (target as Record<string, unknown>)[key]
        : undefined;
    }
    if (typeof target !== "boolean" && !(isNode(target) && nodes.has(target))) {
      throw new SchemaError(
        `agent(): option 'schema' has $ref ${
          JSON.stringify(ref.slice(0, 80))
        } that does not point to a schema within it`,
      );
    }
  }
  return { text, metered };
}
