/** `options` with the keys of `defaults` always present, typed as the defaults are. */
export type Defaulted<O, D> = Omit<O, keyof D> & D;

/**
 * `defaults` overlaid with the values of `options` that are not undefined. A spread
 * (`{ ...defaults, ...options }`) lets `{ concurrency: undefined }` erase a default, and in
 * TypeScript an optional option may always be passed as undefined; this cannot be erased.
 * Only own enumerable keys are copied, as data properties (a `__proto__` key stays a key).
 */
export function withDefaults<D extends object, O extends Partial<D>>(
  defaults: D,
  options: O,
): Defaulted<O, D> {
  return Object.fromEntries([
    ...Object.entries(defaults),
    ...Object.entries(options).filter(([, value]) => value !== undefined),
  ]) as Defaulted<O, D>;
}
