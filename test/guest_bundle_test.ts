/**
 * Every local guest loads one module, `guest/bootstrap_bundle.js`, built from guest/*.js by
 * `deno task bundle:guest`: it must be exactly what those sources bundle to now.
 */
import assert from "node:assert/strict";
import { defaultBootstrapPath } from "../src/isolation/mod.ts";
import { buildGuestBundleText, GUEST_BUNDLE } from "../scripts/bundle_guest.ts";
import { ROOT } from "./helpers.ts";

Deno.test("the guest's bundle is exactly what its sources bundle to today", async () => {
  const committed = await Deno.readTextFile(`${ROOT}/${GUEST_BUNDLE}`);
  const fresh = await buildGuestBundleText();
  // A stale bundle would run guest code older than guest/*.js.
  assert.ok(committed === fresh, `${GUEST_BUNDLE} is stale: run \`deno task bundle:guest\``);
});

Deno.test("every local guest starts from the bundle, which imports nothing", async () => {
  assert.equal(defaultBootstrapPath(), `${ROOT}/${GUEST_BUNDLE}`);
  const text = await Deno.readTextFile(defaultBootstrapPath());
  assert.equal(/^\s*import\s|\bimport\s*\(/m.test(text), false);
});
