/**
 * KV keys as bytes whose byte order is the key order of Deno KV (the ordered tuple encoding of
 * FoundationDB, which Deno KV uses): strings before numbers, strings by their UTF-8 bytes,
 * numbers by value. The Postgres store keeps keys in a `bytea` column, which Postgres compares
 * byte by byte, so a prefix or a range of keys is a range of rows.
 * @module
 */
import type { KvKey, KvKeyPart } from "./types.ts";

const STRING = 0x02;
const NUMBER = 0x21;
/** Past every encoded part: the end of a prefix's range. */
const TOP = 0xff;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

function encodeNumber(value: number): Uint8Array {
  const out = new Uint8Array(9);
  out[0] = NUMBER;
  const view = new DataView(out.buffer);
  view.setFloat64(1, value);
  // Negative numbers flip every bit, others only the sign: byte order becomes numeric order.
  if (out[1]! & 0x80) { for (let i = 1; i < 9; i++) out[i] = ~out[i]! & 0xff; }
  else out[1] = out[1]! | 0x80;
  return out;
}

function encodeString(value: string): Uint8Array {
  const bytes = encoder.encode(value);
  let zeros = 0;
  for (const byte of bytes) if (byte === 0) zeros++;
  const out = new Uint8Array(bytes.length + zeros + 2);
  out[0] = STRING;
  let at = 1;
  // A zero byte inside the string becomes 0x00 0xff, so that 0x00 alone ends the string.
  for (const byte of bytes) {
    out[at++] = byte;
    if (byte === 0) out[at++] = TOP;
  }
  out[at] = 0;
  return out;
}

/** Printable ASCII: strings whose UTF-8 bytes are their characters' codes, none of them zero. */
const PLAIN_ASCII = /^[ -~]*$/;

/** Two lowercase hex digits of every byte value. */
const HEX_PAIRS: readonly string[] = Array.from(
  { length: 256 },
  (_, byte) => byte.toString(16).padStart(2, "0"),
);

/**
 * The bytes of a key as lowercase hex, as the store sends them: the same as hex of
 * {@linkcode encodeKey}, built without the bytes for the common keys (printable ASCII strings),
 * since a commit encodes every key it touches.
 */
export function encodeKeyHex(key: KvKey): string {
  let out = "";
  for (const part of key) {
    if (typeof part === "string" && PLAIN_ASCII.test(part)) {
      // One byte a character, no zero to escape: tag, the characters, the end.
      out += "02";
      for (let i = 0; i < part.length; i++) out += HEX_PAIRS[part.charCodeAt(i)]!;
      out += "00";
      continue;
    }
    if (typeof part !== "string" && typeof part !== "number") {
      throw new TypeError(`Cannot encode a key part of type ${typeof part}`);
    }
    const bytes = typeof part === "string" ? encodeString(part) : encodeNumber(part);
    for (const byte of bytes) out += HEX_PAIRS[byte]!;
  }
  return out;
}

/** The bytes of a key. */
export function encodeKey(key: KvKey): Uint8Array {
  const parts = key.map((part) => {
    if (typeof part === "string") return encodeString(part);
    if (typeof part === "number") return encodeNumber(part);
    throw new TypeError(`Cannot encode a key part of type ${typeof part}`);
  });
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The key whose bytes these are (the inverse of {@linkcode encodeKey}). */
export function decodeKey(bytes: Uint8Array): KvKey {
  const key: KvKeyPart[] = [];
  let at = 0;
  while (at < bytes.length) {
    const tag = bytes[at++];
    if (tag === NUMBER) {
      const raw = bytes.slice(at, at + 9 - 1);
      if (raw[0]! & 0x80) raw[0] = raw[0]! & 0x7f;
      else for (let i = 0; i < 8; i++) raw[i] = ~raw[i]! & 0xff;
      key.push(new DataView(raw.buffer).getFloat64(0));
      at += 8;
    } else if (tag === STRING) {
      const out: number[] = [];
      for (;;) {
        const byte = bytes[at++];
        if (byte === undefined) throw new TypeError("Cannot decode a key: a string has no end");
        if (byte === 0) {
          if (bytes[at] === TOP) {
            out.push(0);
            at++;
            continue;
          }
          break;
        }
        out.push(byte);
      }
      key.push(decoder.decode(new Uint8Array(out)));
    } else {
      throw new TypeError(`Cannot decode a key: unknown part type ${tag}`);
    }
  }
  return key;
}

/** The first bytes past every key that starts with `prefix` (the end of its range). */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefix.length + 1);
  out.set(prefix);
  out[prefix.length] = TOP;
  return out;
}
