/**
 * The guest decides replays with its own synchronous SHA-256 (guest/sha256.js); a hash that
 * differed from the host's by one bit would make every resumed call run live again.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256Hex } from "../guest/sha256.js";

function hostHex(text: string): string {
  return createHash("sha256").update(new TextEncoder().encode(text)).digest("hex");
}

Deno.test("the guest's SHA-256 equals the host's for every padding case, reused buffers included", () => {
  const texts = ["", "a", "é€😀", "x".repeat(55), "x".repeat(56), "y".repeat(64), "z".repeat(119)];
  // Longer than the reused buffer, then short again: nothing of the long text may linger.
  texts.push("long ".repeat(400), "b", JSON.stringify({ prompt: "step 7", options: {} }));
  for (let length = 0; length < 300; length += 7) texts.push("q".repeat(length));
  for (const text of texts) assert.equal(sha256Hex(text), hostHex(text), `length ${text.length}`);
});
