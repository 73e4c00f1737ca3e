import assert from "node:assert/strict";
import { parseAgentCall } from "../src/schemas/mod.ts";

function message(options: unknown, prompt: unknown = "p"): string {
  const parsed = parseAgentCall({ prompt, options });
  assert.equal(parsed.ok, false, "the call was accepted");
  return parsed.ok ? "" : parsed.message;
}

Deno.test("agent() options accept every name of the specification's table", () => {
  const parsed = parseAgentCall({
    prompt: "p",
    options: {
      label: "l",
      phase: "ph",
      effort: "high",
      schema: { type: "object" },
      isolation: "worktree",
      provider: "auto",
      profile: "prof",
      model: "m",
      sandbox: "write",
      workdir: "/tmp",
      session: "s",
      tag: "t",
      estimate: { tokens: 10, usd: 0.5 },
    },
  });
  assert.equal(parsed.ok, true);
  assert.equal(
    parseAgentCall({ prompt: "p", options: { schema_id: "review", estimate: 3 } }).ok,
    true,
  );
});

Deno.test("agent() options take Claude Code's five effort levels and no other", () => {
  for (const effort of ["low", "medium", "high", "xhigh", "max"]) {
    assert.equal(parseAgentCall({ prompt: "p", options: { effort } }).ok, true, effort);
  }
  assert.match(message({ effort: "ultra" }), /^agent\(\): option 'effort' invalid option/);
});

Deno.test("agent() options name an unknown option", () => {
  assert.equal(message({ labl: "x" }), "agent(): unknown option 'labl'");
});

Deno.test("agent() options name a wrongly typed option", () => {
  assert.match(
    message({ sandbox: "rw" }),
    /^agent\(\): option 'sandbox' invalid option: expected one of/,
  );
  assert.match(
    message({ label: 3 }),
    /^agent\(\): option 'label' invalid input: expected string, received number/,
  );
  assert.match(message({ estimate: -1 }), /^agent\(\): option 'estimate' /);
});

Deno.test("agent() options refuse schema together with schema_id, naming both", () => {
  assert.match(
    message({ schema: {}, schema_id: "x" }),
    /'schema' and 'schema_id' are mutually exclusive/,
  );
});

Deno.test("agent() takes an empty prompt, as Claude Code sends it (the run narrates a warning)", () => {
  assert.equal(parseAgentCall({ prompt: "", options: {} }).ok, true);
});
