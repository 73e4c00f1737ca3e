import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { PULSE_WINDOW, type PulseLedger, PulseService } from "../src/services/mod.ts";
import type { Pulse } from "../src/schemas/mod.ts";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

const ASK = ConfigSchema.parse({ sandbox: { full: "ask" } });
type Dashboard = Awaited<ReturnType<typeof startDashboard>>;

async function startRun(d: Dashboard, token: string, script: string): Promise<string> {
  const run = await d.json("/api/workflow/run", {
    token,
    body: { script, fake_dispatch: true, sandbox_max: "full" },
  });
  assert.equal(run.status, 202, JSON.stringify(run.body));
  return String(run.body.run_id);
}

async function ended(d: Dashboard, token: string, runId: string): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const { body } = await d.json(`/api/workflow/${runId}`, { token });
    if (!["queued", "running"].includes(String(body.state))) return String(body.state);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${runId} did not end`);
}

async function waitingApproval(d: Dashboard, token: string): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const { body } = await d.json("/api/approvals?state=pending", { token });
    const [first] = body.approvals as Array<{ approval_id: string }>;
    if (first) return first.approval_id;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("no approval appeared");
}

Deno.test("GET /api/pulse counts a known set of runs right, for the caller's owner only", async () => {
  await using d = await startDashboard({ config: ASK });
  const ok = await startRun(d, TOKENS.alice, `await agent("one"); await agent("two"); return 1;`);
  const bad = await startRun(d, TOKENS.alice, `throw new Error("boom of alice");`);
  const bobs = await startRun(d, TOKENS.bob, `throw new Error("boom of bob");`);
  assert.equal(await ended(d, TOKENS.alice, ok), "succeeded");
  assert.equal(await ended(d, TOKENS.alice, bad), "failed");
  assert.equal(await ended(d, TOKENS.bob, bobs), "failed");
  const held = await startRun(
    d,
    TOKENS.alice,
    `return await agent("deploy", { sandbox: "full" });`,
  );
  const approvalId = await waitingApproval(d, TOKENS.alice);

  const { status, body } = await d.json("/api/pulse", { token: TOKENS.alice });
  assert.equal(status, 200, JSON.stringify(body));
  const alice = body as unknown as Pulse;
  assert.equal(alice.owner, "alice");
  assert.equal(alice.scope, "owner");
  assert.deepEqual(alice.runs, { running: 1, queued: 0, waiting: 1 });
  assert.equal(alice.approvals.pending, 1);
  assert.ok(alice.approvals.oldest_at);
  assert.deepEqual(alice.failures.map((f) => [f.kind, f.id, f.state]), [["run", bad, "failed"]]);
  assert.match(alice.failures[0]!.message, /boom of alice/);
  const history = await d.json("/api/history", { token: TOKENS.alice });
  const calls = history.body.calls as Array<
    { usage: { input_tokens: number; output_tokens: number } }
  >;
  assert.equal(calls.length, 2);
  const tokens = calls.reduce((n, c) => n + c.usage.input_tokens + c.usage.output_tokens, 0);
  assert.equal(alice.spend.day.calls, 2);
  assert.equal(alice.spend.hour.calls, 2);
  assert.equal(alice.spend.day.tokens, tokens);
  assert.equal(alice.spend.complete, true);
  assert.ok(alice.providers.list.some((p) => p.name === "fake" && p.available));
  assert.equal(alice.providers.total, alice.providers.list.length);

  const bob = (await d.json("/api/pulse", { token: TOKENS.bob })).body as unknown as Pulse;
  assert.equal(bob.owner, "bob");
  assert.deepEqual(bob.runs, { running: 0, queued: 0, waiting: 0 });
  assert.equal(bob.approvals.pending, 0);
  assert.deepEqual(bob.failures.map((f) => f.id), [bobs], "bob sees his failure and no other");
  assert.equal(bob.spend.day.calls, 0);
  assert.doesNotMatch(JSON.stringify(bob), /boom of alice|run_.*held/);
  assert.ok(!JSON.stringify(bob).includes(held) && !JSON.stringify(bob).includes(bad));

  const denied = await d.json(`/api/tasks/${approvalId}/deny`, {
    token: TOKENS.alice,
    body: { reason: "not today" },
  });
  assert.equal(denied.status, 200);
  assert.equal(await ended(d, TOKENS.alice, held), "succeeded");
  const events = await readEvents(
    await d.request(`/api/workflow/${held}/events`, { token: TOKENS.alice }),
  );
  const decided = events.find((e) =>
    e.event === "approval" && (e.data as { state: string }).state === "denied"
  );
  assert.deepEqual(
    [
      (decided?.data as Record<string, unknown>).decided_by,
      (decided?.data as Record<string, unknown>).reason,
    ],
    ["alice", "not today"],
    "the run's approval event says who decided and why",
  );
  assert.equal((await d.json("/api/pulse")).status, 401, "no token, no pulse");
});

/** A ledger that counts the reads the pulse makes and the limits it asks for. */
function counting(ledger: PulseLedger): { ledger: PulseLedger; reads: Array<[string, number]> } {
  const reads: Array<[string, number]> = [];
  const count = (name: string, options?: { limit?: number }) =>
    reads.push([name, options?.limit ?? Infinity]);
  return {
    reads,
    ledger: {
      listRuns: (options) => (count("listRuns", options), ledger.listRuns(options)),
      listTasks: (options) => (count("listTasks", options), ledger.listTasks(options)),
      listCalls: (options) => (count("listCalls", options), ledger.listCalls(options)),
      listApprovals: (options) => (count("listApprovals", options), ledger.listApprovals(options)),
    },
  };
}

Deno.test("a pulse costs a fixed number of bounded listings, reused within its freshness", async () => {
  await using d = await startDashboard();
  for (let i = 0; i < 3; i++) {
    await ended(
      d,
      TOKENS.alice,
      await startRun(d, TOKENS.alice, `await agent("x${i}"); return 1;`),
    );
  }
  const { ledger, reads } = counting(d.services.ledger);
  let clock = 1_000_000_000_000;
  const pulse = new PulseService({ ledger, dispatcher: d.services.dispatcher }, {
    ttlMs: 2000,
    now: () => clock,
  });
  const alice = { owner: "alice", remote: true };
  await pulse.pulse(alice);
  const first = reads.splice(0);
  assert.deepEqual(first.map(([name]) => name).sort(), [
    "listApprovals",
    "listCalls",
    "listRuns",
    "listTasks",
  ]);
  const windows: Record<string, number> = {
    listRuns: PULSE_WINDOW.runs,
    listTasks: PULSE_WINDOW.tasks,
    listCalls: PULSE_WINDOW.calls,
    listApprovals: PULSE_WINDOW.approvals,
  };
  for (const [name, limit] of first) assert.equal(limit, windows[name], `${name} is bounded`);
  // Three more runs: still one listing of each kind.
  for (let i = 0; i < 3; i++) {
    await ended(d, TOKENS.alice, await startRun(d, TOKENS.alice, `return ${i};`));
  }
  await pulse.pulse(alice);
  assert.equal(reads.splice(0).length, 0, "within its freshness the answer is reused");
  clock += 2000;
  const later = await pulse.pulse(alice);
  assert.equal(reads.splice(0).length, 4, "afresh: the same four listings, whatever the count");
  assert.equal(later.spend.day.calls, 3);
  await pulse.pulse({ owner: "bob", remote: true });
  assert.equal(reads.splice(0).length, 4, "another owner's pulse is its own");
  const admin = await pulse.pulse({ owner: "root", admin: true });
  assert.equal(admin.scope, "all");
  assert.equal(admin.spend.day.calls, 3);
});
