import assert from "node:assert/strict";
import { tokenMatcher } from "../src/http/token_match.ts";

const ALICE = "alice-token-0123456789abcdef";
const BOB = "bob-token-0123456789abcdef00";
const SHARED = "shared-token-0123456789abcdef";
const BINDINGS = [{ token: ALICE, owner: "alice" }, { token: BOB, owner: "bob" }, {
  token: SHARED,
}];

/** Presented tokens that are near a configured one, and none of them. */
const NEAR = [
  "",
  ALICE.slice(0, -1),
  `${ALICE}x`,
  ALICE.toUpperCase(),
  `${ALICE.slice(0, -1)}g`,
  `x${ALICE}`,
  BOB.slice(1),
  "wrong-token-0123456789abcdef",
];

for (
  const [name, hash] of [
    ["the seeded hash", undefined],
    // Every text in one bucket: the comparison alone decides.
    ["a hash where every token collides", () => 7],
  ] as const
) {
  Deno.test(`a presented token matches only its own binding, under ${name}`, () => {
    const match = tokenMatcher(BINDINGS, hash ? { hash } : {});
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(match(ALICE)?.owner, "alice");
      assert.deepEqual(match(BOB)?.owner, "bob");
      assert.notEqual(match(SHARED), undefined);
      assert.equal(match(SHARED)?.owner, undefined);
      for (const presented of NEAR) assert.equal(match(presented), undefined, presented);
    }
  });
}

Deno.test("a token configured twice acts as its first binding", () => {
  const match = tokenMatcher([{ token: ALICE, owner: "alice" }, { token: ALICE, owner: "bob" }]);
  assert.equal(match(ALICE)?.owner, "alice");
});
