const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/**
 * Whether `value` has the shape of an id made by {@linkcode newId} with `prefix`. Ids come from
 * requests and command lines: one of another shape is no record, and never reaches a ledger key.
 */
export function isId(prefix: string, value: string): boolean {
  return value.length === prefix.length + 19 && value.startsWith(`${prefix}_`) &&
    /^[0-9a-z]{18}$/.test(value.slice(prefix.length + 1));
}

/** An id as an error message shows it: clipped, since it may be anything a caller typed. */
export function shownId(value: string): string {
  return value.length > 64 ? `${value.slice(0, 64)}…` : value;
}

/**
 * A new identifier like `run_01jd3k8m2x4q7r9s`: a millisecond timestamp then 40 random bits,
 * in Crockford base 32, so identifiers sort by creation time.
 */
export function newId(prefix: string): string {
  let time = Date.now();
  let head = "";
  for (let i = 0; i < 10; i++) {
    head = ALPHABET[time % 32] + head;
    time = Math.floor(time / 32);
  }
  const random = crypto.getRandomValues(new Uint8Array(8));
  let tail = "";
  for (const byte of random) tail += ALPHABET[byte % 32];
  return `${prefix}_${head}${tail}`;
}
