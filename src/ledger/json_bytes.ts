import type { JsonValue } from "../schemas/mod.ts";
import { platform } from "../platform/mod.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON as bytes: the ledger's one value encoding, readable by Deno and by Node's @deno/kv alike. */
export function toBytes(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/**
 * The bytes {@linkcode toBytes} gives for an object whose members are already encoded, in the
 * order given (undefined ones left out): a record encoded once to be checked against its size
 * limit is not encoded again inside the document that wraps it.
 */
export function objectBytes(members: Record<string, Uint8Array | undefined>): Uint8Array {
  const parts: Uint8Array[] = [];
  let size = 1;
  for (const [key, value] of Object.entries(members)) {
    if (value === undefined) continue;
    const head = memberHead(key, parts.length === 0);
    parts.push(head, value);
    size += head.length + value.length;
  }
  const out = new Uint8Array(parts.length === 0 ? 2 : size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  if (parts.length === 0) out[offset++] = 123; // "{"
  out[offset] = 125; // "}"
  return out;
}

/** `{"key":` or `,"key":` as bytes, encoded once per key: a document's keys are few. */
function memberHead(key: string, first: boolean): Uint8Array {
  const text = `${first ? "{" : ","}${JSON.stringify(key)}:`;
  let head = HEADS.get(text);
  if (head === undefined) {
    head = encoder.encode(text);
    if (HEADS.size < 64) HEADS.set(text, head);
  }
  return head;
}
const HEADS = new Map<string, Uint8Array>();

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
