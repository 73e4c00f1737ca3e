/**
 * The host and the guest name the same protocol: the guest's method names (guest/protocol.js,
 * which imports nothing from src/) are exactly the methods of the host's typed maps, and the
 * guest's sources send no method by a name of their own.
 */
import assert from "node:assert/strict";
import { GUEST_NOTIFICATION_METHODS, GUEST_REQUEST_METHODS } from "../src/engine/guest_protocol.ts";
import { NOTIFICATION_CHECKS, REQUEST_CHECKS } from "../src/engine/guest_params.ts";
import * as guest from "../guest/protocol.js";
import { ROOT } from "./helpers.ts";

const sorted = (names: readonly string[]) => [...names].sort();

Deno.test("the guest's method names are the host's protocol, request for request", () => {
  assert.deepEqual(sorted(guest.REQUEST_METHODS), sorted(GUEST_REQUEST_METHODS));
  assert.deepEqual(sorted(guest.NOTIFICATION_METHODS), sorted(GUEST_NOTIFICATION_METHODS));
  // Every method has its check at the boundary.
  assert.deepEqual(sorted(Object.keys(REQUEST_CHECKS)), sorted(GUEST_REQUEST_METHODS));
  assert.deepEqual(sorted(Object.keys(NOTIFICATION_CHECKS)), sorted(GUEST_NOTIFICATION_METHODS));
});

Deno.test("the guest sends every method through guest/protocol.js, never by a literal", async () => {
  // The one method named in the guest's text is the host's own `init`, which the guest reads.
  const literal = /\.(?:request|notify)\(\s*["'`]|"method":"(?!' \+|init")/;
  for await (const entry of Deno.readDir(`${ROOT}/guest`)) {
    if (!entry.name.endsWith(".js") || entry.name === "bootstrap_bundle.js") continue;
    const text = await Deno.readTextFile(`${ROOT}/guest/${entry.name}`);
    assert.equal(literal.test(text), false, `guest/${entry.name} names a method by a literal`);
    assert.equal(/from\s+["'][^"']*src\//.test(text), false, `guest/${entry.name} imports src/`);
  }
});
