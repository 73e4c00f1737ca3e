import * as z from "zod";

/** A JSON value, as scripts, clients and the host exchange them. */
export type JsonValue = null | boolean | number | string | JsonValue[] | {
  [key: string]: JsonValue;
};

/** Deepest nesting of arrays and objects accepted in a caller's JSON value (`args`). */
export const MAX_JSON_DEPTH = 64;

/**
 * Why `value` is not a JSON value nested at most `maxDepth` levels deep, or undefined when it
 * is one. The walk is iterative: a hostile value nested thousands of levels deep must get a
 * clear refusal, not exhaust the host's stack (a recursive validator does).
 */
export function jsonProblem(value: unknown, maxDepth: number = MAX_JSON_DEPTH): string | undefined {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: item, depth } = stack.pop()!;
    if (item === null || typeof item === "boolean" || typeof item === "string") continue;
    if (typeof item === "number") {
      if (!Number.isFinite(item)) return "must be JSON (a number must be finite)";
      continue;
    }
    if (typeof item !== "object") return `must be JSON (a ${typeof item} is not)`;
    if (depth >= maxDepth) return `must be JSON nested at most ${maxDepth} levels deep`;
    const children = Array.isArray(item) ? item : Object.values(item);
    for (const child of children) stack.push({ value: child, depth: depth + 1 });
  }
  return undefined;
}

/** How many bytes `value` takes as UTF-8 JSON; `value` must have passed {@linkcode jsonProblem}. */
export function jsonByteLength(value: JsonValue): number {
  return new TextEncoder().encode(JSON.stringify(value)).byteLength;
}

/**
 * A JSON value supplied by a caller, nested at most {@linkcode MAX_JSON_DEPTH} levels deep and,
 * with `maxBytes`, at most that many bytes as UTF-8 JSON (a value the ledger records whole).
 */
export function boundedJson(options: { maxBytes?: number } = {}): z.ZodType<JsonValue> {
  const { maxBytes } = options;
  // `unknown` rather than `custom`, so that the OpenAPI document can describe it (as any JSON).
  return z.unknown().superRefine((value, ctx) => {
    // The size is measured only once the depth is known to be safe to serialise.
    const problem = jsonProblem(value) ??
      (maxBytes !== undefined && jsonByteLength(value as JsonValue) > maxBytes
        ? `must be at most ${maxBytes} bytes as JSON`
        : undefined);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  }).meta({
    description: `any JSON value, nested at most ${MAX_JSON_DEPTH} levels deep${
      maxBytes === undefined ? "" : `, at most ${maxBytes} bytes as JSON`
    }`,
  }) as z.ZodType<JsonValue>;
}

/** A JSON value supplied by a caller, nested at most {@linkcode MAX_JSON_DEPTH} levels deep. */
export const BoundedJsonSchema: z.ZodType<JsonValue> = boundedJson();
