import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { createNarrationPrinter } from "../cli/narration.ts";
import type { RunEvent } from "../src/engine/mod.ts";
import { CallsReplayedEventSchema } from "../src/schemas/mod.ts";
import { feedOf, LOCAL, testManager } from "./helpers.ts";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

/** A chain of calls whose log lines cut the guest's reports of a replayed prefix into batches. */
const CHAIN = `
  const out = [];
  for (let i = 0; i < args.n; i++) {
    if (i % 50 === 0) log("at " + i);
    out.push(await agent("step " + i, { label: "s" + i }));
  }
  return out;
`;

type Replayed = Extract<RunEvent, { type: "calls_replayed" }>;

function replayedOf(events: readonly RunEvent[]): Replayed[] {
  return events.flatMap((e) => e.type === "calls_replayed" ? [e] : []);
}

Deno.test("a resume of 200 calls writes a bounded number of ledger values, and its feed, journal and call log agree", async () => {
  await using t = await testManager();
  const n = 200;
  const first = await t.manager.start({ script: CHAIN, args: { n } }, LOCAL);
  await t.manager.wait(first.run_id, LOCAL);
  const second = await t.manager.start(
    { script: CHAIN, args: { n }, resume_from: first.run_id },
    LOCAL,
  );
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(resumed.journal.replayed, n);
  const journal = await t.manager.journal(second.run_id, LOCAL);
  const events = await feedOf(t.manager, second.run_id);

  // The feed: no event per replayed call, a few events that name each of them once.
  assert.equal(events.filter((e) => e.type === "call").length, 0, "no `call` event per replay");
  const replayed = replayedOf(events);
  assert.ok(replayed.length >= 4 && replayed.length <= 10, `${replayed.length} events`);
  const notes = replayed.flatMap((e) => e.calls);
  assert.deepEqual(notes.map((c) => c.seq), journal.map((e) => e.seq), "each call, in order");
  assert.deepEqual(notes.map((c) => c.label), journal.map((e) => e.label));
  assert.deepEqual(notes.map((c) => c.position), journal.map((e) => e.position ?? null));
  for (const event of replayed) {
    assert.ok(CallsReplayedEventSchema.safeParse(event).success, JSON.stringify(event));
    assert.equal(event.from, first.run_id);
    assert.equal(event.count, event.calls.length);
    assert.deepEqual(
      [event.first_seq, event.last_seq],
      [event.calls[0]!.seq, event.calls.at(-1)!.seq],
    );
  }

  // The ledger: a bounded number of values for the whole prefix, whatever its length.
  const kv = await Deno.openKv(`${t.home}/svc.kv`);
  try {
    const values = async (prefix: Deno.KvKey) =>
      (await Array.fromAsync(kv.list({ prefix }))).length;
    const journalValues = await values(["journal", second.run_id]);
    const eventValues = await values(["events", second.run_id]);
    const calls = (await Array.fromAsync(kv.list<Uint8Array>({ prefix: ["calls"] })))
      .filter((entry) => entry.key[2] === second.run_id)
      .map((entry) => JSON.parse(new TextDecoder().decode(entry.value)));
    assert.ok(journalValues <= 20, `${journalValues} journal values for ${n} calls`);
    assert.ok(eventValues <= 30, `${eventValues} feed values for ${n} calls`);
    assert.ok(calls.length >= 1 && calls.length <= 20, `${calls.length} call records`);
    assert.equal(calls.reduce((sum, c) => sum + (c.count ?? 1), 0), n, "they count every call");
    assert.ok(calls.every((c) => c.outcome === "replayed" && c.cost_usd === 0));
    const firstRun = (await Array.fromAsync(kv.list({ prefix: ["calls"] })))
      .filter((entry) => entry.key[2] === first.run_id);
    assert.equal(firstRun.length, n, "a live call keeps its own record");
  } finally {
    kv.close();
  }

  // A resume of the resume still replays every value exactly as the journal holds it.
  const third = await t.manager.start(
    { script: CHAIN, args: { n }, resume_from: second.run_id },
    LOCAL,
  );
  const again = await t.manager.wait(third.run_id, LOCAL);
  assert.equal(again.journal.replayed, n);
  const last = await t.manager.journal(third.run_id, LOCAL);
  assert.deepEqual(last.map((e) => e.result), journal.map((e) => e.result));
  const lastEvents = replayedOf(await feedOf(t.manager, third.run_id));
  assert.ok(lastEvents.every((e) => e.from === first.run_id), "values trace to their maker");
});

Deno.test("the run's event stream carries calls_replayed as its OpenAPI schema says, to its owner only", async () => {
  await using d = await startDashboard();
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: CHAIN, args: { n: 3 }, fake_dispatch: true },
  });
  assert.equal(started.status, 202);
  const sourceId = String(started.body.run_id);
  await d.services.runs.wait(sourceId, { owner: "alice" });
  const resumed = await d.json(`/api/workflow/${sourceId}/resume`, {
    token: TOKENS.alice,
    body: { fake_dispatch: true },
  });
  assert.equal(resumed.status, 202);
  const runId = String(resumed.body.run_id);
  await d.services.runs.wait(runId, { owner: "alice" });

  const response = await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice });
  assert.equal(response.status, 200);
  const events = (await readEvents(response)).filter((e) => e.event === "calls_replayed");
  assert.equal(events.length, 1, JSON.stringify(events));
  const data = events[0]!.data as Replayed;
  assert.deepEqual(
    [data.count, data.first_seq, data.last_seq, data.from],
    [3, 1, 3, sourceId],
  );
  assert.deepEqual(data.calls.map((c) => c.label), ["s0", "s1", "s2"]);

  const doc = d.server.app.openapi() as unknown as {
    components: { schemas: Record<string, unknown> };
  };
  assert.ok(doc.components.schemas.CallsReplayedEvent, "the event's schema is documented");
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema({ ...doc, $id: "https://svc.local/openapi.json" });
  const validate = ajv.getSchema(
    "https://svc.local/openapi.json#/components/schemas/CallsReplayedEvent",
  );
  assert.ok(validate && validate(data), JSON.stringify(validate?.errors));
  assert.ok(!validate({ ...data, calls: [{ seq: 1, position: null, label: "x".repeat(81) }] }));

  const bob = await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.bob });
  assert.equal(bob.status, 404, "another owner's run is not there");
  await bob.body?.cancel();
});

Deno.test("the narration prints one line for a replayed prefix reported in batches, before the next call", () => {
  const lines: string[] = [];
  const printer = createNarrationPrinter({ line: (text) => lines.push(text) });
  const at = new Date().toISOString();
  const batch = (first: number, count: number): RunEvent => ({
    type: "calls_replayed",
    run_id: "run_b",
    at,
    count,
    first_seq: first,
    last_seq: first + count - 1,
    from: "run_a",
    calls: Array.from({ length: count }, (_, i) => ({
      seq: first + i,
      position: [first + i - 1],
      label: null,
    })),
  });
  const log = (text: string): RunEvent => ({
    type: "narration",
    run_id: "run_b",
    at,
    entry: { at, kind: "log", text },
  });
  for (let i = 0; i < 4; i++) {
    printer.onEvent(log(`at ${i * 50}`));
    printer.onEvent(batch(i * 50 + 1, 50));
  }
  printer.onEvent({
    type: "call_started",
    run_id: "run_b",
    at,
    seq: 201,
    label: null,
    phase: null,
    position: [200],
  });
  printer.onEvent(batch(202, 1));
  printer.flush();
  assert.deepEqual(lines, [
    "at 0",
    "at 50",
    "at 100",
    "at 150",
    "replayed 200 calls from run run_a",
    "replayed 1 call from run run_a",
  ]);
});
