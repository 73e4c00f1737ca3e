/**
 * A work budget for validating one answer against a script's schema. Validation runs on the
 * host's event loop, synchronously: a schema whose `$ref`s branch (`anyOf` of two references
 * to itself) costs exponential time on a short answer, and no timer can interrupt it. So every
 * schema node, every pattern test and every uniqueness check charges the meter of the
 * validation in progress, and the validation stops when the budget is spent.
 * @module
 */

/** Thrown out of a validation whose work went over its budget; caught by the validator. */
export class WorkLimitExceeded extends Error {
  constructor(limit: number) {
    super(`the validation took more than ${limit} work units`);
    this.name = "WorkLimitExceeded";
  }
}

let active: { spent: number; limit: number } | undefined;

/**
 * Runs `validate` with a budget of `limit` work units. Validations are synchronous, so one
 * module-level meter serves them all: none can start while another runs.
 */
export function metered<T>(limit: number, validate: () => T): T {
  const outer = active;
  active = { spent: 0, limit };
  try {
    return validate();
  } finally {
    active = outer;
  }
}

/** Charges `units` to the validation in progress; throws when its budget is spent. */
export function charge(units: number): void {
  if (active === undefined) return;
  active.spent += units;
  if (active.spent > active.limit) throw new WorkLimitExceeded(active.limit);
}

/**
 * What a schema node's own checks cost on one value besides its subschemas (which charge for
 * themselves): a loop over an object's keys or an array's items, a string's length.
 */
export function directSize(data: unknown): number {
  if (typeof data === "string") return Math.ceil(data.length / 16);
  if (Array.isArray(data)) return data.length;
  if (data !== null && typeof data === "object") {
    let keys = 0;
    for (const _ in data) keys++;
    return keys;
  }
  return 0;
}
