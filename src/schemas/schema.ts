/**
 * One problem a failed validation found: where (`path`), which kind (`code`, zod's issue codes)
 * and what is wrong in words (`message`); `keys` names the fields of an `unrecognized_keys` one.
 */
export interface SchemaIssue {
  /** The field's path from the top of the value, e.g. `["providers", "claude", "type"]`. */
  path: PropertyKey[];
  /** The kind of problem, e.g. `invalid_type` or `unrecognized_keys`. */
  code: string;
  /** What is wrong, in words. */
  message: string;
  /** The unknown field names of an `unrecognized_keys` issue. */
  keys?: string[];
}

/** The outcome of {@linkcode Schema.safeParse}: the validated value, or the problems found. */
export type SchemaResult<T> =
  | {
    /** The value is valid. */
    success: true;
    /** The validated value, defaults applied. */
    data: T;
    /** Absent on success, so that `result.error?.issues` reads without narrowing first. */
    error?: undefined;
  }
  | {
    /** The value is not valid. */
    success: false;
    /** Absent on failure. */
    data?: undefined;
    /** The problems, the first one the most telling. */
    error: { issues: SchemaIssue[] };
  };

/**
 * A validator of untrusted input as the library API offers it: the part of a zod schema callers
 * use, so that the public types do not tie callers to zod's own.
 */
export interface Schema<T> {
  /** Returns the validated value (defaults applied), or throws an error listing the issues. */
  parse(input: unknown): T;
  /** Validates without throwing. */
  safeParse(input: unknown): SchemaResult<T>;
}
