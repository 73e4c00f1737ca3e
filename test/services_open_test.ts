/**
 * `openServices()` opens the ledger and the board together: when one of them cannot open, the
 * other is closed and the failure reaches the caller (the test's resource check holds it).
 */
import assert from "node:assert/strict";
import { openServices } from "../src/services/mod.ts";
import { tempDir } from "./helpers.ts";

Deno.test({
  name: "a board that cannot open fails the services' opening and leaves no ledger open",
  sanitizeResources: true,
  sanitizeOps: true,
  fn: async () => {
    await using home = await tempDir();
    // A file where the board's directory should be.
    const boardDir = `${home.path}/board_file`;
    await Deno.writeTextFile(boardDir, "");
    await assert.rejects(openServices({ home: `${home.path}/home`, boardDir }));
  },
});

Deno.test("opening the services removes the scratch directories of dead hosts' guests and harness calls", async () => {
  await using dir = await tempDir();
  const tmp = `${dir.path}/home/tmp`;
  // A pid above the kernel's largest: no process has it.
  for (const name of ["call-4194400.1-x", "guest-4194400.1-y"]) {
    await Deno.mkdir(`${tmp}/${name}`, { recursive: true });
  }
  await using _services = await openServices({ home: `${dir.path}/home` });
  assert.deepEqual([...Deno.readDirSync(tmp)].map((entry) => entry.name), []);
});
