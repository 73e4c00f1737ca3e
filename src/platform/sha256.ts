/**
 * SHA-256 in plain JavaScript, for the small inputs a run hashes (a call's prompt and options,
 * an owner's name). Node's `crypto` is faster per byte, but loading it starts a large part of
 * Deno's Node layer (some 10 to 15 ms of a one-call `svc workflow run`); the Deno platform
 * hashes inputs up to {@linkcode SMALL_HASH_BYTES} here and larger ones with Node's.
 * @module
 */

/** Inputs up to this size are hashed here (a few hundred microseconds at most). */
export const SMALL_HASH_BYTES = 64 * 1024;

const K = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

/** `data` padded to whole 64-byte blocks: a 1 bit, zeros, and its length in bits, big-endian. */
function padded(data: Uint8Array): Uint8Array {
  const length = data.length;
  const end = (((length + 8) >>> 6) + 1) * 64;
  const out = new Uint8Array(end);
  out.set(data);
  out[length] = 0x80;
  const view = new DataView(out.buffer);
  view.setUint32(end - 8, Math.floor(length / 0x20000000));
  view.setUint32(end - 4, (length << 3) >>> 0);
  return out;
}

/** Mixes one 64-byte block at `offset` of `bytes` into the state `h`. */
function compress(h: Int32Array, w: Int32Array, bytes: DataView, offset: number): void {
  for (let t = 0; t < 16; t++) w[t] = bytes.getInt32(offset + t * 4);
  for (let t = 16; t < 64; t++) {
    const a = w[t - 15]!;
    const b = w[t - 2]!;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
  }
  let a = h[0]!, b = h[1]!, c = h[2]!, d = h[3]!, e = h[4]!, f = h[5]!, g = h[6]!, k = h[7]!;
  for (let t = 0; t < 64; t++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (k + s1 + ((e & f) ^ (~e & g)) + K[t]! + w[t]!) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0]! + a) | 0;
  h[1] = (h[1]! + b) | 0;
  h[2] = (h[2]! + c) | 0;
  h[3] = (h[3]! + d) | 0;
  h[4] = (h[4]! + e) | 0;
  h[5] = (h[5]! + f) | 0;
  h[6] = (h[6]! + g) | 0;
  h[7] = (h[7]! + k) | 0;
}

/** The SHA-256 digest (32 bytes) of `data`. */
export function sha256Js(data: Uint8Array): Uint8Array {
  const blocks = padded(data);
  const view = new DataView(blocks.buffer);
  const h = new Int32Array([
    0x6a09e667,
    0xbb67ae85,
    0x3c6ef372,
    0xa54ff53a,
    0x510e527f,
    0x9b05688c,
    0x1f83d9ab,
    0x5be0cd19,
  ]);
  const w = new Int32Array(64);
  for (let offset = 0; offset < blocks.length; offset += 64) compress(h, w, view, offset);
  const digest = new Uint8Array(32);
  const out = new DataView(digest.buffer);
  for (let i = 0; i < 8; i++) out.setInt32(i * 4, h[i]!);
  return digest;
}
