/**
 * Whether two secrets (strings, or byte arrays such as digests) are equal, compared without
 * an early exit: the time taken depends only on their lengths, never on where they differ.
 * Every comparison of a secret (bearer tokens, guest nonces) goes through it.
 */
export function timingSafeEqual(a: string, b: string): boolean;
/** Byte arrays, such as digests, compared as {@linkcode timingSafeEqual} compares strings. */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
export function timingSafeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  // Two strings are compared code unit by code unit as they are: a bearer token is compared
  // on every request, and copies of both would cost more than the comparison.
  if (typeof a === "string" && typeof b === "string") {
    let diff = a.length ^ b.length;
    for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ (b.charCodeAt(i) | 0);
    return diff === 0;
  }
  const left = typeof a === "string" ? codeUnits(a) : a;
  const right = typeof b === "string" ? codeUnits(b) : b;
  let diff = left.length ^ right.length;
  for (let i = 0; i < left.length; i++) diff |= left[i]! ^ (right[i] ?? 0);
  return diff === 0;
}

function codeUnits(text: string): Uint16Array {
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return units;
}
