import type { Ajv, ValidateFunction } from "ajv";
import { joinPath, platform } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { PATTERN_LIMITS } from "./pattern_limits.ts";
import { SchemaError } from "./schema_error.ts";
import { prepareSchema, SCHEMA_LIMITS } from "./schema_limits.ts";
import { metered, WorkLimitExceeded } from "./validation_meter.ts";

export { PATTERN_LIMITS, SCHEMA_LIMITS, SchemaError };

/** A compiled schema, ready to check a call's result. */
export interface CompiledSchema {
  /** The schema itself, for the provider to aim at. */
  schema: Record<string, unknown> | boolean;
  /** Null when the value is valid, else the validation errors in words. */
  check(value: JsonValue): string[] | null;
}

/** Limits of validation, beside the schema's own ({@linkcode SCHEMA_LIMITS}). */
export const VALIDATION_LIMITS = {
  /**
   * Work units one validation may spend, a unit being about a microsecond: a schema node
   * evaluated once costs one unit and one per 64 bytes of it, plus the value's keys, items
   * or 16 characters; a pattern test costs the text's length times the pattern's size over
   * 64. It also bounds the errors collected, at most a few per unit.
   */
  maxWork: 1_000_000,
  /** Compiled schemas a registry keeps (one run's or one task's); the oldest go first. */
  cacheSize: 64,
  /** Validation errors reported for one answer. */
  maxErrors: 20,
  /** Characters of one reported validation error. */
  maxErrorChars: 300,
} as const;

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function clipError(text: string): string {
  const max = VALIDATION_LIMITS.maxErrorChars;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A folder of registered schemas, and how messages name it (never by its path on the host). */
export interface SchemaFolder {
  dir: string;
  shown: string;
}

/** The registry of a call: `schemas` of its project, then of the data directory. */
export function schemaRegistryFor(places: { projectDir: string; home: string }): SchemaRegistry {
  return new SchemaRegistry([
    { dir: joinPath(places.projectDir, "schemas"), shown: "the project's schemas/ folder" },
    { dir: joinPath(places.home, "schemas"), shown: "svc's saved schemas" },
  ]);
}

/**
 * Resolves `schema` and `schema_id` options to compiled validators. Registered schemas are
 * files `<id>.json` in a `schemas` folder of the project, then of `SVC_HOME`.
 */
export class SchemaRegistry {
  readonly #folders: SchemaFolder[];
  /** Made at the first schema compiled: a run without one never loads ajv or re2js. */
  #ajv: Ajv | undefined;
  readonly #cache = new Map<string, CompiledSchema>();

  constructor(folders: SchemaFolder[]) {
    this.#folders = folders;
  }

  /**
   * Compiles an inline schema. Rejects with SchemaError when it is over the limits
   * ({@linkcode SCHEMA_LIMITS}, the pattern limits) or ajv cannot compile it.
   */
  async compile(schema: Record<string, unknown> | boolean): Promise<CompiledSchema> {
    const prepared = prepareSchema(schema);
    const cached = this.#cache.get(prepared.text);
    if (cached) {
      // Most recently used last: the map's order is the eviction order.
      this.#cache.delete(prepared.text);
      this.#cache.set(prepared.text, cached);
      return cached;
    }
    const { createAjv, compileMetered } = await import("./ajv_instance.ts");
    const ajv = this.#ajv ??= createAjv();
    let validate: ValidateFunction;
    try {
      validate = compileMetered(ajv, prepared.metered);
    } catch (error) {
      if (error instanceof SchemaError) throw error;
      throw new SchemaError(
        `agent(): option 'schema' cannot be compiled: ${
          clipError(error instanceof Error ? error.message : "invalid schema")
        }`,
      );
    }
    const compiled: CompiledSchema = {
      schema,
      check(value) {
        try {
          if (metered(VALIDATION_LIMITS.maxWork, () => validate(value))) return null;
        } catch (error) {
          if (error instanceof WorkLimitExceeded) {
            return [
              `(root) cannot be validated: checking it against the schema takes more than ${VALIDATION_LIMITS.maxWork} work units`,
            ];
          }
          if (error instanceof RangeError) return ["(root) is nested too deeply to validate"];
          throw error;
        }
        return (validate.errors ?? []).slice(0, VALIDATION_LIMITS.maxErrors).map((e) =>
          clipError(`${e.instancePath || "(root)"} ${e.message ?? "is invalid"}`)
        );
      },
    };
    this.#cache.set(prepared.text, compiled);
    if (this.#cache.size > VALIDATION_LIMITS.cacheSize) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    return compiled;
  }

  /** Loads and compiles a registered schema. Throws SchemaError naming the id when there is none. */
  async resolve(id: string): Promise<CompiledSchema> {
    if (!ID.test(id)) {
      throw new SchemaError(`agent(): option 'schema_id' '${id}' is not a valid schema id`);
    }
    const p = platform();
    for (const folder of this.#folders) {
      const path = joinPath(folder.dir, `${id}.json`);
      let text: string;
      try {
        text = await p.readTextFile(path);
      } catch {
        continue;
      }
      let schema: unknown;
      try {
        schema = JSON.parse(text);
      } catch {
        throw new SchemaError(`agent(): schema '${id}' (in ${folder.shown}) is not valid JSON`);
      }
      if (
        typeof schema !== "boolean" &&
        (schema === null || typeof schema !== "object" || Array.isArray(schema))
      ) {
        throw new SchemaError(
          `agent(): schema '${id}' (in ${folder.shown}) is not a JSON Schema object`,
        );
      }
      return await this.compile(schema as Record<string, unknown> | boolean);
    }
    throw new SchemaError(
      `agent(): no registered schema '${id}' (looked in ${
        this.#folders.map((f) => f.shown).join(", ")
      })`,
    );
  }
}

/**
 * The text of the first ```json fence of `output` (the fence line may say `json` or nothing,
 * followed by a newline), or undefined. Found by scanning, not by a backtracking regex: the
 * text is a provider's answer of any length.
 */
function fencedText(output: string): string | undefined {
  for (let at = output.indexOf("```"); at >= 0; at = output.indexOf("```", at + 1)) {
    let i = at + 3;
    if (output.startsWith("json", i)) i += 4;
    let newline = -1;
    while (i < output.length && /\s/.test(output[i]!)) {
      if (output[i] === "\n") newline = i;
      i++;
    }
    if (newline < 0) continue;
    const close = output.indexOf("```", newline + 1);
    return close < 0 ? undefined : output.slice(newline + 1, close);
  }
  return undefined;
}

/**
 * A provider's answer to a schema call as a JSON value: objects as they are, text parsed as
 * JSON (also inside a ```json fence), anything else unchanged for the validator to reject.
 */
export function structuredValue(output: JsonValue): JsonValue {
  if (typeof output !== "string") return output;
  const text = (fencedText(output) ?? output).trim();
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return output;
  }
}
