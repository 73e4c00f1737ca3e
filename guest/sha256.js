// SHA-256, synchronous and self-contained: the guest hashes a call the moment it is made, so
// that replay decides each call in the order the script made it, with nothing to await and no
// runtime function the script could have replaced.
import {
  encodeUtf8,
  Int32ArrayCtor,
  TypedArrayPrototypeFill,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeSet,
  Uint8ArrayCtor,
} from "./primordials.js";

const K = new Int32ArrayCtor([
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
const HEX = "0123456789abcdef";
// Reused by every hash: the guest is single-threaded and a hash never yields.
const w = new Int32ArrayCtor(64);
const h = new Int32ArrayCtor(8);
/** Padded input up to this size reuses one buffer (a call's prompt and options are small). */
let scratch = new Uint8ArrayCtor(1024);

/** Leaves the SHA-256 state of `data` in `h`: the one core both exports below share. */
function digestInto(data) {
  const length = TypedArrayPrototypeGetLength(data);
  const blocks = ((length + 8) >>> 6) + 1;
  if (blocks * 64 > TypedArrayPrototypeGetLength(scratch)) {
    scratch = new Uint8ArrayCtor(blocks * 64);
  }
  const padded = scratch;
  TypedArrayPrototypeFill(padded, 0, length, blocks * 64);
  TypedArrayPrototypeSet(padded, data, 0);
  padded[length] = 0x80;
  const bits = length * 8;
  const end = blocks * 64;
  // The length in bits, big-endian, in the last 8 bytes (texts stay far below 2^53 bits).
  const high = (bits / 0x100000000) >>> 0;
  padded[end - 8] = high >>> 24;
  padded[end - 7] = high >>> 16;
  padded[end - 6] = high >>> 8;
  padded[end - 5] = high;
  padded[end - 4] = bits >>> 24;
  padded[end - 3] = bits >>> 16;
  padded[end - 2] = bits >>> 8;
  padded[end - 1] = bits;
  h[0] = 0x6a09e667;
  h[1] = 0xbb67ae85;
  h[2] = 0x3c6ef372;
  h[3] = 0xa54ff53a;
  h[4] = 0x510e527f;
  h[5] = 0x9b05688c;
  h[6] = 0x1f83d9ab;
  h[7] = 0x5be0cd19;
  for (let block = 0; block < end; block += 64) {
    for (let t = 0; t < 16; t++) {
      const j = block + t * 4;
      w[t] = (padded[j] << 24) | (padded[j + 1] << 16) | (padded[j + 2] << 8) | padded[j + 3];
    }
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15];
      const b = w[t - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (let t = 0; t < 64; t++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (k + s1 + ch + K[t] + w[t]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
  }
}

/**
 * The SHA-256 digest (32 bytes) of `data`. The host hashes a run's small inputs with it too, so
 * that a one-call run does not load Node's crypto layer; both sides then agree by construction.
 * @param {Uint8Array} data
 * @returns {Uint8Array}
 */
export function sha256Bytes(data) {
  digestInto(data);
  const out = new Uint8ArrayCtor(32);
  for (let i = 0; i < 8; i++) {
    const word = h[i];
    out[i * 4] = word >>> 24;
    out[i * 4 + 1] = word >>> 16;
    out[i * 4 + 2] = word >>> 8;
    out[i * 4 + 3] = word;
  }
  return out;
}

/**
 * Lowercase hex SHA-256 of the UTF-8 bytes of `text`, as the host's `sha256()` gives it.
 * @param {string} text
 * @returns {string}
 */
export function sha256Hex(text) {
  digestInto(encodeUtf8(text));
  let out = "";
  for (let i = 0; i < 8; i++) {
    const word = h[i];
    for (let shift = 28; shift >= 0; shift -= 4) out += HEX[(word >>> shift) & 15];
  }
  return out;
}
