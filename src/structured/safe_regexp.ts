/**
 * The regular expressions of a script's schema (`pattern`, `patternProperties`), for ajv's
 * `code.regExp` hook: compiled by re2js, whose matching time is linear in the input (no
 * backtracking), with the program size of each pattern and of a whole schema bounded, and
 * every test charged to the validation's work meter.
 * @module
 */
import { RE2JS } from "re2js";
import { SchemaError } from "./schema_error.ts";
import { PATTERN_LIMITS } from "./pattern_limits.ts";
import { charge } from "./validation_meter.ts";

/** What ajv needs of a regular expression. */
export interface SafeRegExp {
  test(text: string): boolean;
  toString(): string;
}

let compiling: { instructions: number } | undefined;

/**
 * Runs `compile` (an ajv compilation) with a fresh budget of pattern instructions, so that the
 * patterns of one schema together stay within {@linkcode PATTERN_LIMITS}.
 */
export function compilingSchema<T>(compile: () => T): T {
  const outer = compiling;
  compiling = { instructions: 0 };
  try {
    return compile();
  } finally {
    compiling = outer;
  }
}

function quoted(pattern: string): string {
  const clipped = pattern.length > 80 ? `${pattern.slice(0, 79)}…` : pattern;
  return JSON.stringify(clipped);
}

function programSize(re: RE2JS, pattern: string): number {
  // re2js keeps its compiled program on an internal field; without it, assume the worst that
  // re2 allows (a repeat expands its operand at most a thousandfold).
  const inst = (re as unknown as { re2Input?: { prog?: { inst?: unknown[] } } }).re2Input?.prog
    ?.inst;
  return Array.isArray(inst) ? inst.length : pattern.length * 1000;
}

/**
 * Compiles a schema pattern with re2js. Throws SchemaError naming the pattern when it is too
 * long, uses what re2 cannot do in linear time (backreferences, lookaround), or compiles to
 * too large a program.
 */
export function safeRegExp(pattern: string, _flags?: string): SafeRegExp {
  const problem = (why: string) =>
    new SchemaError(`agent(): option 'schema' has a pattern ${quoted(pattern)} that ${why}`);
  if (pattern.length > PATTERN_LIMITS.maxLength) {
    throw problem(`is longer than ${PATTERN_LIMITS.maxLength} characters`);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    const reason = error instanceof Error
      ? error.message.replace(/^error parsing regexp: /, "")
      : "";
    throw problem(
      `cannot be compiled as a linear-time (RE2) expression: ${reason.slice(0, 120)}` +
        " (backreferences and lookaround are not supported)",
    );
  }
  const size = programSize(re, pattern);
  if (size > PATTERN_LIMITS.maxProgram) {
    throw problem(
      `compiles to ${size} instructions, over the limit of ${PATTERN_LIMITS.maxProgram}`,
    );
  }
  if (compiling) {
    compiling.instructions += size;
    if (compiling.instructions > PATTERN_LIMITS.maxSchemaProgram) {
      throw new SchemaError(
        `agent(): option 'schema' has patterns of more than ${PATTERN_LIMITS.maxSchemaProgram} instructions together`,
      );
    }
  }
  const source = `/${pattern}/`;
  return {
    test(text: string): boolean {
      // Matching costs up to the input's length times the program's size (when re2 leaves its
      // DFA), some 15 ns a step: a unit of work is about a microsecond.
      charge(1 + Math.ceil((text.length + 1) * size / 64));
      return re.test(text);
    },
    toString: () => source,
  };
}
