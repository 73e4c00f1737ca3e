import type { JsonValue } from "../schemas/mod.ts";

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

/** Hex SHA-256 of a string. */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
