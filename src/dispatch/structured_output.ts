import { Ajv, type ValidateFunction } from "ajv";
import { joinPath, platform } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";

/** A compiled schema, ready to check a call's result. */
export interface CompiledSchema {
  /** The schema itself, for the provider to aim at. */
  schema: Record<string, unknown> | boolean;
  /** Null when the value is valid, else the validation errors in words. */
  check(value: JsonValue): string[] | null;
}

/** Why a schema could not be used: a bug in the script, surfaced as a TypeError. */
export class SchemaError extends Error {}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Resolves `schema` and `schema_id` options to compiled validators. Registered schemas are
 * files `<id>.json` in a `schemas` folder of the project, then of `SVC_HOME`.
 */
export class SchemaRegistry {
  readonly #folders: string[];
  readonly #ajv = new Ajv({ allErrors: true, strict: false });
  readonly #cache = new Map<string, CompiledSchema>();

  constructor(folders: string[]) {
    this.#folders = folders;
  }

  /** Compiles an inline schema. Throws SchemaError when ajv cannot compile it. */
  compile(schema: Record<string, unknown> | boolean): CompiledSchema {
    const key = JSON.stringify(schema);
    const cached = this.#cache.get(key);
    if (cached) return cached;
    let validate: ValidateFunction;
    try {
      validate = this.#ajv.compile(schema);
    } catch (error) {
      throw new SchemaError(
        `agent(): option 'schema' cannot be compiled: ${
          error instanceof Error ? error.message : "invalid schema"
        }`,
      );
    }
    const compiled: CompiledSchema = {
      schema,
      check(value) {
        if (validate(value)) return null;
        return (validate.errors ?? []).map((e) =>
          `${e.instancePath || "(root)"} ${e.message ?? "is invalid"}`
        );
      },
    };
    this.#cache.set(key, compiled);
    return compiled;
  }

  /** Loads and compiles a registered schema. Throws SchemaError naming the id when there is none. */
  async resolve(id: string): Promise<CompiledSchema> {
    if (!ID.test(id)) {
      throw new SchemaError(`agent(): option 'schema_id' '${id}' is not a valid schema id`);
    }
    const p = platform();
    for (const folder of this.#folders) {
      const path = joinPath(folder, `${id}.json`);
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
        throw new SchemaError(`agent(): schema '${id}' (${path}) is not valid JSON`);
      }
      if (
        typeof schema !== "boolean" &&
        (schema === null || typeof schema !== "object" || Array.isArray(schema))
      ) {
        throw new SchemaError(`agent(): schema '${id}' (${path}) is not a JSON Schema object`);
      }
      return this.compile(schema as Record<string, unknown> | boolean);
    }
    throw new SchemaError(
      `agent(): no registered schema '${id}' (looked in ${this.#folders.join(", ")})`,
    );
  }
}

/**
 * A provider's answer to a schema call as a JSON value: objects as they are, text parsed as
 * JSON (also inside a ```json fence), anything else unchanged for the validator to reject.
 */
export function structuredValue(output: JsonValue): JsonValue {
  if (typeof output !== "string") return output;
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n?```/.exec(output);
  const text = (fenced ? fenced[1]! : output).trim();
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return output;
  }
}
