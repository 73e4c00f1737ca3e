import assert from "node:assert/strict";
import { SvcError } from "../src/errors/mod.ts";
import { newId } from "../src/ledger/mod.ts";
import { MAX_ARGS_BYTES } from "../src/schemas/mod.ts";
import { countingDispatcher, LOCAL, tempDir, testManager } from "./helpers.ts";

const WORDS = `
  const out = [];
  for (const word of args.words) out.push(await agent("say " + word, { label: word }));
  return { out, n: args.n };
`;

function refusal(code: string, message: RegExp): (error: unknown) => boolean {
  return (error: unknown) => {
    assert.ok(error instanceof SvcError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  };
}

Deno.test("a run's args, schema attempts and script folder are recorded with its script and read back", async () => {
  await using t = await testManager();
  await using folder = await tempDir();
  const args = { words: ["a", "b"], n: 7, nested: { deep: [1, null, "x"] } };
  const run = await t.manager.start({
    script: WORDS,
    args,
    schema_attempts: 2,
    script_dir: folder.path,
  }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(await t.ledger.getRunInput(run.run_id), {
    script: WORDS,
    args,
    schema_attempts: 2,
    script_dir: await Deno.realPath(folder.path),
  });

  // `null` is an argument; no args at all is none.
  const nullArgs = await t.manager.start({ script: `return args;`, args: null }, LOCAL);
  const none = await t.manager.start({ script: `return args === undefined;` }, LOCAL);
  await t.manager.wait(nullArgs.run_id, LOCAL);
  await t.manager.wait(none.run_id, LOCAL);
  assert.deepEqual(await t.ledger.getRunInput(nullArgs.run_id), {
    script: `return args;`,
    args: null,
    schema_attempts: 3,
  });
  const noArgs = await t.ledger.getRunInput(none.run_id);
  assert.ok(noArgs && !("args" in noArgs), JSON.stringify(noArgs));

  assert.equal(await t.ledger.getRunInput("run_0000000000nothere"), undefined);
  assert.equal(await t.ledger.getRunInput("../../etc"), undefined);
});

Deno.test("a run recorded before its input was kept reads with its script alone, and resumes without args", async () => {
  await using t = await testManager();
  const script = `return [await agent("one"), args === undefined];`;
  const run = await t.manager.start({ script, args: { given: true } }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  // What an older svc left: the script, and no input.json beside it.
  await Deno.remove(`${t.home}/runs/${run.run_id}/input.json`);
  assert.deepEqual(await t.ledger.getRunInput(run.run_id), { script });
  const resumed = await t.manager.resume(run.run_id, LOCAL);
  const status = await t.manager.wait(resumed.run_id, LOCAL);
  assert.deepEqual(status.result, ["fake response to: one", true]);
  assert.equal(status.journal.replayed, 1);
});

Deno.test("args larger than 1 MiB as JSON are refused before anything is recorded, by the request and by the ledger", async () => {
  await using t = await testManager();
  const big = "x".repeat(MAX_ARGS_BYTES);
  await assert.rejects(
    t.manager.start({ script: `return 1;`, args: { big } }, LOCAL),
    refusal(
      "invalid_request",
      /Cannot start the run: 'args' must be at most 1048576 bytes as JSON/,
    ),
  );
  // Multi-byte text counts in bytes, not characters.
  await assert.rejects(
    t.manager.start({ script: `return 1;`, args: "é".repeat(MAX_ARGS_BYTES / 2) }, LOCAL),
    refusal("invalid_request", /must be at most 1048576 bytes as JSON/),
  );
  assert.deepEqual(await t.manager.list(LOCAL), []);
  // Just under the limit is fine, and read back whole.
  const fits = "y".repeat(MAX_ARGS_BYTES - 16);
  const run = await t.manager.start({ script: `return args.length;`, args: fits }, LOCAL);
  assert.equal((await t.manager.wait(run.run_id, LOCAL)).result, fits.length);
  assert.equal((await t.ledger.getRunInput(run.run_id))?.args, fits);

  // The ledger holds the line for callers that skip the request schema.
  const status = structuredClone(await t.manager.get(run.run_id, LOCAL))!;
  status.run_id = newId("run");
  await assert.rejects(
    t.ledger.createRun(status, {
      input: { script: "return 1;", args: big },
      host: { id: newId("host"), pid: 1 },
      event: { type: "state", run_id: status.run_id, at: status.created_at, state: "queued" },
    }),
    refusal("invalid_request", /its args are larger than 1048576 bytes as JSON/),
  );
  assert.equal(await t.ledger.getRun(status.run_id), undefined);
});

Deno.test("resume runs the source's script again with its args and settings, replaying every call", async () => {
  const dispatcher = countingDispatcher();
  await using t = await testManager({ dispatcher });
  await using work = await tempDir();
  const source = await t.manager.start({
    script: WORDS,
    filename: "words.js",
    args: { words: ["a", "b", "c"], n: 3 },
    workdir: work.path,
    timeout: 120,
    sandbox_default: "write",
    sandbox_max: "full",
    budget_tokens: 100_000,
    max_agents: 50,
    concurrency: 2,
    schema_attempts: 2,
  }, LOCAL);
  const ended = await t.manager.wait(source.run_id, LOCAL);
  assert.equal(ended.state, "succeeded");
  assert.equal(dispatcher.count(), 3);

  const resumed = await t.manager.resume(source.run_id, LOCAL);
  const status = await t.manager.wait(resumed.run_id, LOCAL);
  assert.equal(dispatcher.count(), 3, "nothing was dispatched again");
  assert.equal(status.state, "succeeded");
  assert.deepEqual(status.result, ended.result);
  assert.equal(status.resumed_from, source.run_id);
  const settings = (s: typeof status) => ({
    filename: s.filename,
    isolation: s.isolation,
    sandbox_default: s.sandbox_default,
    sandbox_max: s.sandbox_max,
    workdir: s.workdir,
    timeout: s.timeout,
    fake_dispatch: s.fake_dispatch,
    limits: s.limits,
    caps: [s.budget.tokens.cap, s.budget.usd.cap],
  });
  assert.deepEqual(settings(status), settings(ended));
  assert.deepEqual(
    (await t.manager.journal(resumed.run_id, LOCAL)).map((e) => [e.label, e.outcome]),
    [["a", "replayed"], ["b", "replayed"], ["c", "replayed"]],
  );
  assert.deepEqual(await t.ledger.getRunInput(resumed.run_id), {
    script: WORDS,
    args: { words: ["a", "b", "c"], n: 3 },
    schema_attempts: 2,
  });
});

Deno.test("a resume may change fake dispatch, the timeout and the budgets, and nothing else", async () => {
  await using t = await testManager();
  const source = await t.manager.start({ script: `return await agent("x");`, timeout: 60 }, LOCAL);
  await t.manager.wait(source.run_id, LOCAL);
  const resumed = await t.manager.resume(source.run_id, LOCAL, {
    fake_dispatch: true,
    timeout: 90,
    budget_tokens: 5000,
    budget_usd: 2,
  });
  const status = await t.manager.wait(resumed.run_id, LOCAL);
  assert.equal(status.fake_dispatch, true);
  assert.equal(status.timeout, 90);
  assert.equal(status.budget.tokens.cap, 5000);
  assert.equal(status.budget.usd.cap, 2);
  for (
    const [options, message] of [
      [{ script: "return 2;" }, /Cannot resume run 'run_\w+': unknown field 'script'/],
      [{ args: { n: 1 } }, /unknown field 'args'/],
      [{ timeout: 0 }, /'timeout'/],
      [{ budget_usd: -1 }, /'budget_usd'/],
      ["fast", /Cannot resume run/],
    ] as const
  ) {
    await assert.rejects(
      t.manager.resume(source.run_id, LOCAL, options),
      refusal("invalid_request", message),
    );
  }
});

Deno.test("resume refuses an unknown run and another owner's alike, and a run still running as a conflict", async () => {
  await using t = await testManager({ fakeLatencyMs: 60_000 });
  const alice = { owner: "alice" };
  const running = await t.manager.start({ script: `await agent("slow");` }, alice);
  await assert.rejects(
    t.manager.resume(running.run_id, { owner: "bob" }),
    refusal("not_found", new RegExp(`^Cannot resume run '${running.run_id}': no such run$`)),
  );
  await assert.rejects(
    t.manager.resume("run_0000000000nothere", alice),
    refusal("not_found", /^Cannot resume run 'run_0000000000nothere': no such run$/),
  );
  await assert.rejects(
    t.manager.input(running.run_id, { owner: "bob" }),
    refusal("not_found", /no such run/),
  );
  await assert.rejects(
    t.manager.resume(running.run_id, alice),
    refusal("conflict", /^Cannot resume from run 'run_\w+': it is still (queued|running)$/),
  );
  assert.equal((await t.manager.list(alice)).length, 1, "no run was started");
  await t.manager.cancel(running.run_id, alice);
  await t.manager.wait(running.run_id, alice);
});
