import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { checkScript } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import {
  LEGACY_CHAIN_JSON_SCHEMA,
  LEGACY_DEPRECATION,
  legacyRunRequest,
  legacyToScript,
  MAX_LEGACY_CHAIN_BYTES,
  parseLegacyChain,
  splitPrompt,
} from "../src/legacy/mod.ts";
import { WorkflowRunRequestSchema } from "../src/schemas/mod.ts";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { LOCAL, scriptedProvider, testManager } from "./helpers.ts";

const REVIEW_YAML = `version: 1
name: review
description: Plan a fix, then apply it
steps:
  - id: plan
    prompt: "Plan a fix for: {{input}}"
  - id: apply
    prompt: "Apply this plan: {{ steps.plan.output }}"
    effort: low
`;

const REVIEW_JSON = JSON.stringify({
  version: 1,
  name: "review",
  description: "Plan a fix, then apply it",
  steps: [
    { id: "plan", prompt: "Plan a fix for: {{input}}" },
    { id: "apply", prompt: "Apply this plan: {{ steps.plan.output }}", effort: "low" },
  ],
});

const PLAN = "fake response to: Plan a fix for: the login bug";
const APPLY = `fake response to: Apply this plan: ${PLAN}`;

/** The message of what `fn` throws, which must be an invalid_request SvcError. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof SvcError, `an SvcError, not ${error}`);
    assert.equal(error.code, "invalid_request");
    return error.message;
  }
  assert.fail("it was accepted");
}

Deno.test("a chain's second step gets the first step's output through {{steps.<id>.output}}, run by the real engine", async () => {
  await using t = await testManager();
  const legacy = legacyRunRequest({
    chain: REVIEW_YAML,
    input: "the login bug",
    fake_dispatch: true,
  });
  const started = await t.manager.start(legacy.request, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, { output: APPLY, steps: { plan: PLAN, apply: APPLY } });
  assert.equal(status.name, "review", "the chain's name names the run");
  assert.equal(status.filename, "review.legacy.js");
  const journal = await t.manager.journal(started.run_id, LOCAL);
  assert.deepEqual(journal.map((entry) => entry.label), ["plan", "apply"]);
});

Deno.test("the YAML and the JSON form of a chain are the same chain and translate to the same script", () => {
  assert.deepEqual(parseLegacyChain(REVIEW_YAML), parseLegacyChain(REVIEW_JSON));
  assert.deepEqual(parseLegacyChain(JSON.parse(REVIEW_JSON)), parseLegacyChain(REVIEW_YAML));
  assert.equal(
    legacyRunRequest({ chain: REVIEW_JSON }).script,
    legacyRunRequest({ chain: JSON.parse(REVIEW_JSON) }).script,
  );
});

Deno.test("the run request passes the workflow run schema, carries the input and the run options, and the script passes the script check", () => {
  const legacy = legacyRunRequest(
    { chain: REVIEW_YAML, input: "x", timeout: 60, max_agents: 5, budget_tokens: 1000 },
    { filename: "my review.yaml" },
  );
  const request = WorkflowRunRequestSchema.parse(legacy.request);
  assert.deepEqual(request.args, { input: "x" });
  assert.equal(request.timeout, 60);
  assert.equal(request.max_agents, 5);
  assert.equal(request.budget_tokens, 1000);
  assert.equal(request.filename, "my-review.legacy.js", "named after the file, made a safe name");
  assert.ok(legacy.notice.startsWith(LEGACY_DEPRECATION));
  assert.match(legacy.notice, /my-review\.legacy\.js/);
  assert.equal(legacy.chain.steps.length, 2);
  const checked = checkScript(legacy.script, { filename: request.filename ?? "x.js" });
  assert.equal(checked.meta?.name, "review");
  assert.equal(checked.meta?.description, "Plan a fix, then apply it");
  assert.equal(legacyRunRequest({ chain: REVIEW_JSON }).request.filename, "review.legacy.js");
});

Deno.test("bad chain files are refused with a message that names the step (id and index) and the field", () => {
  const step = (extra: string) => `version: 1\nsteps:\n  - id: plan\n    prompt: go\n${extra}`;
  const cases: Array<[string, unknown, RegExp]> = [
    [
      "an unknown key (a typo)",
      step("    modle: opus\n"),
      /step 'plan' \(steps\[0\]\): unknown field 'modle'/,
    ],
    [
      "an unknown top-level key",
      "version: 1\nstep:\n  - id: a\n    prompt: x\n",
      /: unknown field 'step'$/,
    ],
    [
      "a duplicate id",
      step("  - id: plan\n    prompt: again\n"),
      /step 'plan' \(steps\[1\]\): 'id' repeats 'plan': step ids must be unique/,
    ],
    [
      "a placeholder to a later step",
      "version: 1\nsteps:\n  - id: a\n    prompt: '{{steps.b.output}}'\n  - id: b\n    prompt: x\n",
      /step 'a' \(steps\[0\]\): 'prompt' names \{\{steps\.b\.output\}\}, which is no earlier step/,
    ],
    [
      "a placeholder to an unknown step",
      step("  - id: apply\n    prompt: 'Apply {{steps.nope.output}}'\n"),
      /step 'apply' \(steps\[1\]\): 'prompt' names \{\{steps\.nope\.output\}\}, which is no earlier step/,
    ],
    [
      "a placeholder to the step itself",
      "version: 1\nsteps:\n  - id: a\n    prompt: '{{steps.a.output}}'\n",
      /step 'a' \(steps\[0\]\): 'prompt' names \{\{steps\.a\.output\}\}, which is no earlier step/,
    ],
    [
      "a misspelt placeholder",
      "version: 1\nsteps:\n  - id: a\n    prompt: 'Fix {{inptu}}'\n",
      /step 'a' \(steps\[0\]\): 'prompt' names \{\{inptu\}\}, which is no placeholder/,
    ],
    [
      "a missing prompt",
      "version: 1\nsteps:\n  - id: a\n    model: opus\n",
      /step 'a' \(steps\[0\]\): 'prompt' is missing/,
    ],
    [
      "a prompt of the wrong type",
      "version: 1\nsteps:\n  - id: a\n    prompt: [1, 2]\n",
      /step 'a' \(steps\[0\]\): 'prompt' must be a string, not an array/,
    ],
    [
      "an option of the wrong value",
      step("    effort: enormous\n"),
      /step 'plan' \(steps\[0\]\): 'effort' /,
    ],
    [
      "a bad id",
      "version: 1\nsteps:\n  - id: Plan Step\n    prompt: x\n",
      /step 'Plan Step' \(steps\[0\]\): 'id' must be a lower-case letter/,
    ],
    [
      "both schema and schema_id",
      step("    schema: {type: object}\n    schema_id: thing\n"),
      /step 'plan' \(steps\[0\]\): 'schema_id' must not be given with 'schema'/,
    ],
    [
      "too many steps",
      JSON.stringify({
        version: 1,
        steps: Array.from({ length: 51 }, (_, i) => ({ id: `s${i}`, prompt: "x" })),
      }),
      /'steps' must have at most 50 steps/,
    ],
    ["no steps", "version: 1\nsteps: []\n", /'steps' must have at least one step/],
    ["version 2", "version: 2\nsteps: []\n", /'version' must be 1/],
    ["not YAML at all", "steps: [unclosed", /it is not YAML or JSON \(line 1, column \d+\)/],
    ["not a mapping", "just some words", /it must be a mapping with 'version: 1' and 'steps'/],
    ["a duplicate key", "version: 1\nversion: 1\nsteps: []\n", /it is not YAML or JSON/],
    ["empty", "  \n", /it is empty/],
    [
      "a __proto__ key",
      step("    schema: {__proto__: {type: string}}\n"),
      /step 'plan' \(steps\[0\]\): 'schema' has the key '__proto__'/,
    ],
    [
      "an alias bomb",
      `version: 1\na: &a [x, x, x, x, x, x, x, x, x, x]\n${
        Array.from({ length: 60 }, (_, i) => `b${i}: *a`).join("\n")
      }\nsteps: []\n`,
      /it is not YAML or JSON/,
    ],
    [
      "too large in bytes (fewer characters than bytes)",
      `# ${"é".repeat(MAX_LEGACY_CHAIN_BYTES / 2 + 10)}\n`,
      /it is larger than 262144 bytes/,
    ],
  ];
  for (const [what, chain, expected] of cases) {
    const message = refusal(() => legacyRunRequest({ chain } as never, { filename: "c.yaml" }));
    assert.match(message, /^Cannot read the legacy workflow 'c\.yaml': /, what);
    assert.match(message, expected, `${what}: ${message}`);
  }
});

Deno.test("a bad run option of a legacy request is refused naming the field", () => {
  assert.match(
    refusal(() => legacyRunRequest({ chain: REVIEW_YAML, timeout: -1 })),
    /^Cannot run the legacy workflow: 'timeout' /,
  );
  assert.match(
    refusal(() => legacyRunRequest({ chain: REVIEW_YAML, script: "x" } as never)),
    /unknown field 'script'/,
  );
  assert.match(
    refusal(() =>
      legacyRunRequest({ chain: REVIEW_YAML, sandbox_default: "write", sandbox_max: "read-only" })
    ),
    /'sandbox_max' must not be below sandbox_default/,
  );
});

Deno.test("placeholders are split linearly; braces that are no placeholder word stay text", () => {
  assert.deepEqual(splitPrompt("a {{input}} b {{ steps.x-1.output }}{{#each}} {{ a b }}"), [
    { kind: "text", text: "a " },
    { kind: "input" },
    { kind: "text", text: " b " },
    { kind: "step", id: "x-1" },
    { kind: "text", text: "{{#each}} {{ a b }}" },
  ]);
  assert.deepEqual(splitPrompt("{{{input}}}"), [
    { kind: "text", text: "{" },
    { kind: "input" },
    { kind: "text", text: "}" },
  ]);
  const many = "{{".repeat(50_000) + "}}";
  assert.deepEqual(splitPrompt(many), [{ kind: "text", text: many }]);
});

const HOSTILE = [
  "${globalThis.pwned = 1} `backticks` */ /* </script> \"double\" 'single' \\ back",
  '"); throw new Error("escaped"); ("',
  "\u202e reversed \u2028 line \u0085 next",
].join("\n");

Deno.test("hostile prompt text reaches the agent verbatim and never becomes code", async () => {
  const chain = {
    version: 1,
    name: "x */ throw 1; /*",
    description: "*/ }); throw new Error('meta'); ({",
    steps: [
      { id: "a", prompt: `${HOSTILE} {{input}}`, label: "` + x + `", phase: '"); x("' },
      { id: "b", prompt: `{{steps.a.output}}${HOSTILE}` },
    ],
  };
  const legacy = legacyRunRequest({ chain, input: "${input} `x` */", fake_dispatch: true });
  assert.doesNotMatch(legacy.script, /[\u202e\u2028\u0085]/, "invisible characters are escaped");
  assert.doesNotMatch(legacy.script, /`\$\{globalThis/, "no template literal holds the text");
  await using t = await testManager();
  const started = await t.manager.start(legacy.request, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const a = `fake response to: ${HOSTILE} \${input} \`x\` */`;
  const b = `fake response to: ${a}${HOSTILE}`;
  assert.deepEqual(status.result, { output: b, steps: { a, b } });
  assert.equal(status.name, chain.name);
  const journal = await t.manager.journal(started.run_id, LOCAL);
  assert.equal(journal[0]?.label, "` + x + `");
});

Deno.test("a schema step's output is its object in the result and its JSON text in later prompts", async () => {
  const chain = {
    version: 1,
    steps: [
      {
        id: "judge",
        prompt: "Judge {{input}}",
        schema: { type: "object", properties: { ok: { const: true } }, required: ["ok"] },
      },
      { id: "report", prompt: "Report on {{steps.judge.output}}" },
    ],
  };
  await using t = await testManager();
  const legacy = legacyRunRequest({ chain, input: "it", fake_dispatch: true });
  const started = await t.manager.start(legacy.request, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, {
    output: 'fake response to: Report on {"ok":true}',
    steps: { judge: { ok: true }, report: 'fake response to: Report on {"ok":true}' },
  });
});

Deno.test("a step whose agent() call returns null fails the run with an error naming the step", async () => {
  await using t = await testManager();
  const legacy = legacyRunRequest({
    chain: REVIEW_YAML,
    input: "x",
    fake_dispatch: true,
    max_agents: 1,
  });
  const started = await t.manager.start(legacy.request, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.match(String(status.error?.message), /step 'apply' \(steps\[1\]\) got no result/);
});

Deno.test("a chain that timed out resumes: the journaled step is replayed and the chain finishes", async () => {
  let slow = true;
  const provider = scriptedProvider("stub", (prompt) => ({
    output: `done: ${prompt}`,
    delayMs: prompt.startsWith("Apply") && slow ? 60_000 : 0,
  }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const chain = REVIEW_YAML.replaceAll("    prompt:", "    provider: stub\n    prompt:");
  const first = legacyRunRequest({ chain, input: "the bug", timeout: 1 });
  const started = await t.manager.start(first.request, LOCAL);
  const timedOut = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(timedOut.state, "timeout");
  assert.deepEqual([timedOut.journal.live, timedOut.journal.failed], [1, 1]);

  slow = false;
  const again = legacyRunRequest({ chain, input: "the bug", resume_from: started.run_id });
  const second = await t.manager.start(again.request, LOCAL);
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(resumed.state, "succeeded", JSON.stringify(resumed.error));
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [1, 1]);
  assert.equal(provider.calls, 1 + 1 + 1, "only the cut step ran again");
  const plan = "done: Plan a fix for: the bug";
  assert.deepEqual(resumed.result, {
    output: `done: Apply this plan: ${plan}`,
    steps: { plan, apply: `done: Apply this plan: ${plan}` },
  });

  // `svc workflow resume` and POST .../resume take the recorded script and args: the same.
  const third = await t.manager.resume(second.run_id, LOCAL);
  const replayed = await t.manager.wait(third.run_id, LOCAL);
  assert.deepEqual([replayed.journal.replayed, replayed.journal.live], [2, 0]);
  assert.deepEqual(replayed.result, resumed.result);
});

Deno.test("POST /api/workflow/legacy starts an ordinary run and answers with the notice, the script and deprecation headers", async () => {
  await using d = await startDashboard();
  const response = await d.request("/api/workflow/legacy", {
    method: "POST",
    token: TOKENS.alice,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ chain: REVIEW_YAML, input: "the login bug", fake_dispatch: true }),
  });
  assert.equal(response.status, 202);
  assert.equal(response.headers.get("deprecation"), "true");
  assert.equal(response.headers.get("link"), '</api/workflow/run>; rel="successor-version"');
  const body = await response.json();
  assert.match(body.deprecation, /deprecated/);
  assert.equal(body.script, legacyRunRequest({ chain: REVIEW_YAML }).script);
  const events = await readEvents(await d.request(body.events_url, { token: TOKENS.alice }));
  assert.equal((events.at(-1)?.data as { state: string }).state, "succeeded");
  const status = await d.json(body.status_url, { token: TOKENS.alice });
  assert.equal(status.body.owner, "alice");
  assert.deepEqual(status.body.result, { output: APPLY, steps: { plan: PLAN, apply: APPLY } });
  const script = await d.json(`/api/workflow/${body.run_id}/script`, { token: TOKENS.alice });
  assert.equal(script.body.script, body.script);
  assert.deepEqual(script.body.args, { input: "the login bug" });

  const bad = await d.json("/api/workflow/legacy", {
    token: TOKENS.alice,
    body: { chain: { version: 1, steps: [{ id: "a", prompt: "{{steps.z.output}}" }] } },
  });
  assert.equal(bad.status, 400);
  assert.match(
    String((bad.body.error as { message: string }).message),
    /step 'a' \(steps\[0\]\): 'prompt' names \{\{steps\.z\.output\}\}/,
  );
  const wrong = await d.json("/api/workflow/legacy", { token: TOKENS.alice, body: { chain: 3 } });
  assert.equal(wrong.status, 400);
});

Deno.test("the chain format is published as a JSON Schema that refuses unknown keys", () => {
  const schema = LEGACY_CHAIN_JSON_SCHEMA as {
    properties: { steps: { items: { additionalProperties: boolean; properties: object } } };
    additionalProperties: boolean;
  };
  assert.equal(schema.additionalProperties, false);
  assert.equal(schema.properties.steps.items.additionalProperties, false);
  assert.ok("provider" in schema.properties.steps.items.properties);
  assert.ok(legacyToScript(parseLegacyChain(REVIEW_YAML)).includes("export const meta"));
});
