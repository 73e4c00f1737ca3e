/**
 * Reading a version-1 chain from its file's text (YAML or JSON) or from a parsed value, with
 * errors that name the step (id and index) and the field: `Cannot read the legacy workflow:
 * step 'apply' (steps[1]): 'prompt' names {{steps.nope.output}}, which is no earlier step`.
 * @module
 */
import { parse as parseYaml } from "yaml";
import { SvcError } from "../errors/mod.ts";
import { jsonByteLength, jsonProblem, type JsonValue } from "../schemas/mod.ts";
import { type LegacyChain, LegacyChainSchema } from "./chain_schema.ts";

/** The largest chain file, in bytes of UTF-8 (and the largest parsed chain, as JSON). */
export const MAX_LEGACY_CHAIN_BYTES = 256 * 1024;
/** YAML aliases a chain file may use: enough for shared options, too few for an alias bomb. */
const MAX_ALIASES = 50;
/** Longest piece of hostile text (a key, a parser's message) an error repeats. */
const SHOWN_LIMIT = 120;

/** Options of {@linkcode parseLegacyChain}. */
export interface ParseLegacyChainOptions {
  /** The file the chain came from, named in errors. */
  filename?: string;
}

/** Text from a file or a request as an error shows it: escaped, clipped. */
export function shown(text: string, limit = SHOWN_LIMIT): string {
  const escaped = JSON.stringify(text).slice(1, -1);
  return escaped.length > limit ? `${escaped.slice(0, limit)}...` : escaped;
}

function failure(reason: string, options: ParseLegacyChainOptions): SvcError {
  const what = options.filename === undefined
    ? "the legacy workflow"
    : `the legacy workflow '${shown(options.filename)}'`;
  return new SvcError("invalid_request", `Cannot read ${what}: ${reason}`);
}

/** Parses YAML (JSON is YAML too) with unique keys and a bounded number of aliases. */
function parseText(text: string, options: ParseLegacyChainOptions): unknown {
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > MAX_LEGACY_CHAIN_BYTES) {
    throw failure(`it is larger than ${MAX_LEGACY_CHAIN_BYTES} bytes`, options);
  }
  if (text.trim() === "") throw failure("it is empty", options);
  try {
    return parseYaml(text, {
      maxAliasCount: MAX_ALIASES,
      uniqueKeys: true,
      // Pretty errors carry the line and column (the snippet after the first line is dropped).
      prettyErrors: true,
      // Plain JSON-like values only: no !!binary, !!set or custom tags.
      schema: "core",
      customTags: [],
    });
  } catch (error) {
    const first = error instanceof Error ? error.message.split("\n")[0] ?? "" : "";
    const detail = first.replace(/ at line \d+, column \d+:?$/, "");
    throw failure(
      `it is not YAML or JSON${positionOf(error)}${detail ? `: ${shown(detail)}` : ""}`,
      options,
    );
  }
}

/** ` (line L, column C)` of a YAML error that has a position. */
function positionOf(error: unknown): string {
  if (typeof error !== "object" || error === null || !("linePos" in error)) return "";
  const pos = (error as { linePos?: Array<{ line: number; col: number }> }).linePos?.[0];
  return pos ? ` (line ${pos.line}, column ${pos.col})` : "";
}

/**
 * The path of the first object holding a `__proto__` key: in an object literal of the
 * translated script that key would set a prototype, not a property.
 */
function protoKeyPath(value: unknown, path: PropertyKey[]): PropertyKey[] | undefined {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = protoKeyPath(item, [...path, index]);
      if (found !== undefined) return found;
    }
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key === "__proto__") return path;
      const found = protoKeyPath(item, [...path, key]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** Where an issue path points: `step 'apply' (steps[1]): 'prompt'`, or `'name'` above the steps. */
function placeOf(raw: unknown, path: readonly PropertyKey[]): { step: string; field: string } {
  const [head, index, ...rest] = path;
  if (head === "steps" && typeof index === "number") {
    const steps = (raw as { steps?: unknown }).steps;
    const item = Array.isArray(steps) ? steps[index] : undefined;
    const id = typeof item === "object" && item !== null
      ? (item as { id?: unknown }).id
      : undefined;
    const name = typeof id === "string" && id !== "" ? `'${shown(id, 64)}' ` : "";
    return {
      step: `step ${name}(steps[${index}])`,
      field: rest.map((part) => shown(String(part), 64)).join("."),
    };
  }
  return { step: "", field: path.map((part) => shown(String(part), 64)).join(".") };
}

/** `a string`, `an array`. */
function article(word: string): string {
  return `${/^[aeiou]/.test(word) ? "an" : "a"} ${word}`;
}

/**
 * Validates a chain given as the text of its file (YAML or JSON) or as a parsed value. Throws
 * `SvcError("invalid_request")` naming the step (id and index) and the field of the first problem.
 */
export function parseLegacyChain(
  source: unknown,
  options: ParseLegacyChainOptions = {},
): LegacyChain {
  const raw = typeof source === "string" ? parseText(source, options) : source;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw failure(
      "it must be a mapping with 'version: 1' and 'steps' (a list of steps with 'id' and 'prompt')",
      options,
    );
  }
  const problem = jsonProblem(raw);
  if (problem !== undefined) throw failure(`it ${problem}`, options);
  if (typeof source !== "string" && jsonByteLength(raw as JsonValue) > MAX_LEGACY_CHAIN_BYTES) {
    throw failure(`it is larger than ${MAX_LEGACY_CHAIN_BYTES} bytes as JSON`, options);
  }
  const proto = protoKeyPath(raw, []);
  if (proto !== undefined) {
    const place = placeOf(raw, proto);
    const field = place.field === "" ? "" : `'${place.field}' has `;
    throw failure(
      `${place.step ? `${place.step}: ` : ""}${field || "it has "}the key '__proto__', ` +
        "which a chain may not use",
      options,
    );
  }
  const parsed = LegacyChainSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  // An unknown key is most often the cause of the rest (a misspelt field is also a missing one).
  const issues = parsed.error.issues;
  const issue = issues.find((i) => i.code === "unrecognized_keys") ?? issues[0]!;
  const place = placeOf(raw, issue.path);
  const wrongType = issue.code === "invalid_type"
    ? /expected (\w+), received (\w+)$/.exec(issue.message)
    : null;
  const message = wrongType?.[2] === "undefined"
    ? "is missing"
    : wrongType
    ? `must be ${article(wrongType[1]!)}, not ${article(wrongType[2]!)}`
    : `${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`;
  let reason: string;
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.slice(0, 5).map((key) => `'${shown(key, 64)}'`).join(", ");
    reason = place.field === ""
      ? `unknown field ${keys}`
      : `'${place.field}' has the unknown field ${keys}`;
  } else if (place.field === "") {
    reason = message;
  } else {
    reason = `'${place.field}' ${message}`;
  }
  throw failure(place.step ? `${place.step}: ${reason}` : reason, options);
}
