import type { JsonValue } from "../schemas/mod.ts";
import { platform } from "../platform/mod.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON as bytes: the ledger's one value encoding, readable by Deno and by Node's @deno/kv alike. */
export function toBytes(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Reads a value written by {@linkcode toBytes}. */
export function fromBytes<T = JsonValue>(bytes: Uint8Array): T {
  return JSON.parse(decoder.decode(bytes)) as T;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * Hex SHA-256 of a string. Synchronous: every `agent()` call hashes on the run's critical
 * path, where Web Crypto's async digest cost several times as much as the hash itself.
 */
export function sha256(text: string): string {
  let hex = "";
  for (const byte of platform().sha256(encoder.encode(text))) hex += HEX[byte];
  return hex;
}
