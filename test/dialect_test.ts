/** The dialect of Claude Code's workflow scripts: meta, effort, model aliases (issue 10). */
import assert from "node:assert/strict";
import { fixture, narration, runCli, runScript } from "./helpers.ts";

Deno.test("an unknown meta field is narrated as a warning at the start of the run, and the run goes on", async () => {
  const status = await runScript(
    `export const meta = {\n  name: "w",\n  colour: "red",\n  phases: [{ title: "A", detail: "d" }],\n}\nreturn 1`,
    { filename: "w.js" },
  );
  assert.equal(status.state, "succeeded");
  assert.deepEqual(narration(status, "warning"), [
    `w.js:3:3: meta field "colour" is not known to svc: kept, not used`,
  ]);
  assert.equal(status.narration[0]?.kind, "warning", "before anything else the run narrates");
  assert.deepEqual(status.meta, { name: "w", phases: ["A"] });
});

Deno.test("svc workflow run prints an unknown meta field as one warning line on stderr", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("dialect/unknown_meta.js"),
    "--fake-dispatch",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const warnings = result.stderr.split("\n").filter((line) => line.includes("warning"));
  assert.deepEqual(warnings, [
    `warning: unknown_meta.js:6:3: meta field "icon" is not known to svc: kept, not used`,
  ]);
});
