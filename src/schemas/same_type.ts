/**
 * `true` when `A` and `B` are the same type, else `false`. Hand-written public types are pinned
 * to the zod schemas that validate them with it, so that the two cannot drift apart.
 */
export type SameType<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2)
  ? true
  : false;

/** Compiles only when `T` is `true`: `type _ = Assert<SameType<Config, z.infer<...>>>`. */
export type Assert<T extends true> = T;
