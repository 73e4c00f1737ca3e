/**
 * The Deno platform hashes small inputs (a run's call hashes, an owner's name) with the guest's
 * JavaScript SHA-256 so that a run does not load Node's crypto layer, and larger ones with Node's:
 * both must give exactly Node's digest, or a resumed call would no longer match its journal.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { platform } from "../src/platform/mod.ts";
import { sha256Bytes, sha256Hex } from "../guest/sha256.js";
import { SMALL_HASH_BYTES } from "../src/platform/deno.ts";

function nodeHex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function hex(digest: Uint8Array): string {
  return [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

Deno.test("the JavaScript SHA-256 equals Node's for every padding case", () => {
  const inputs: Uint8Array[] = [];
  for (let length = 0; length < 300; length++) {
    inputs.push(Uint8Array.from({ length }, (_, i) => (i * 31 + length) & 0xff));
  }
  inputs.push(new TextEncoder().encode("é€😀 " + JSON.stringify({ prompt: "step 7" })));
  inputs.push(new Uint8Array(SMALL_HASH_BYTES).fill(0xa5));
  for (const data of inputs) {
    assert.equal(hex(sha256Bytes(data)), nodeHex(data), `length ${data.length}`);
  }
  assert.equal(
    hex(sha256Bytes(new TextEncoder().encode("abc"))),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});

Deno.test("the guest's hex SHA-256 of a text and the host's digest of its bytes agree, after hashes of any size", () => {
  for (const text of ["", "abc", "é€😀 ".repeat(40), "x".repeat(5000), "step 7"]) {
    const bytes = new TextEncoder().encode(text);
    assert.equal(sha256Hex(text), nodeHex(bytes));
    assert.equal(hex(sha256Bytes(bytes)), nodeHex(bytes));
  }
});

Deno.test("the platform's SHA-256 is Node's on both sides of the small-input limit", () => {
  for (const length of [0, 1, 64, SMALL_HASH_BYTES - 1, SMALL_HASH_BYTES, SMALL_HASH_BYTES + 1]) {
    const data = Uint8Array.from({ length }, (_, i) => (i * 7) & 0xff);
    assert.equal(hex(platform().sha256(data)), nodeHex(data), `length ${length}`);
  }
  const large = new Uint8Array(3 * SMALL_HASH_BYTES + 5).fill(1);
  assert.equal(hex(platform().sha256(large)), nodeHex(large));
});
