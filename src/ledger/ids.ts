const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

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
