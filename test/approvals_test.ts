/**
 * Approvals: a run's `agent()` call or a dispatch asking for the `full` sandbox while the
 * configuration says `sandbox.full: "ask"` waits for a person, who decides from any process
 * sharing the ledger.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { type ApprovalRecord, type Caller, newId, type RunEvent } from "../src/ledger/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { createNarrationPrinter } from "../cli/narration.ts";
import { ADMIN, fixture, LOCAL, narration, runCommand, tempDir } from "./helpers.ts";

const ASK = ConfigSchema.parse({ sandbox: { full: "ask" } });
const BOB: Caller = { owner: "bob" };
const FULL_CALL =
  `const answer = await agent("deploy the release", { sandbox: "full", label: "deploy" });
return { answer };`;

/** Services over `home` whose configuration says `sandbox.full: "ask"`. */
function askServices(home: string): Promise<Services> {
  return openServices({
    home,
    config: ASK,
    dispatcher: createDispatcher({ config: ASK, fakeLatencyMs: 0 }),
    recoverEveryMs: 60_000,
  });
}

/** Follows a run's feed until one of its calls waits for approval; returns that event. */
async function pendingApproval(
  s: Services,
  runId: string,
): Promise<Extract<RunEvent, { type: "approval" }>> {
  for await (const { event } of s.runs.events(runId, LOCAL)) {
    if (event.type === "approval" && event.state === "pending") return event;
  }
  throw new Error(`run ${runId} ended before a call waited for approval`);
}

/** Reads a task until it waits for approval; returns the approval's id. */
async function taskWaiting(s: Services, taskId: string): Promise<string> {
  for (;;) {
    const task = await s.tasks.get(taskId, LOCAL);
    assert.ok(task, "the task exists");
    if (task.waiting_for_approval !== undefined) return task.waiting_for_approval;
    assert.equal(task.state === "queued" || task.state === "running", true, task.state);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Decides an approval from a second, real process on the same SVC_HOME. */
async function decideElsewhere(
  home: string,
  ref: string,
  action: "approve" | "deny",
  options: { by: string; reason?: string },
): Promise<string> {
  const result = await runCommand(Deno.execPath(), [
    "run",
    "--allow-read",
    "--allow-write",
    "--allow-run",
    "--allow-env",
    "--allow-sys=uid",
    fixture("decide_approval.ts"),
    home,
    ref,
    action,
    options.by,
    ...(options.reason !== undefined ? [options.reason] : []),
  ], { env: { SVC_HOME: home } });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim();
}

/** The error code and message a call rejects with. */
async function failure(call: () => Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await call();
  } catch (error) {
    assert.ok(error instanceof SvcError, String(error));
    return { code: error.code, message: error.message };
  }
  throw new Error("the call did not fail");
}

Deno.test("a run's full call under ask waits, is listed, and runs with full once another process approves it; a resume replays it without asking", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const run = await s.runs.start(
    { script: FULL_CALL, fake_dispatch: true, sandbox_max: "full" },
    LOCAL,
  );
  const waiting = await pendingApproval(s, run.run_id);
  assert.equal(waiting.seq, 1);
  assert.equal(waiting.label, "deploy");

  const listed = await s.approvals.list(LOCAL);
  assert.equal(listed.length, 1);
  const approval = listed[0]!;
  assert.equal(approval.approval_id, waiting.approval_id);
  assert.equal(approval.state, "pending");
  assert.equal(approval.kind, "call");
  assert.equal(approval.run_id, run.run_id);
  assert.equal(approval.call_seq, 1);
  assert.equal(approval.label, "deploy");
  assert.equal(approval.prompt_preview, "deploy the release");
  assert.equal(approval.sandbox, "full");
  assert.equal((await s.runs.get(run.run_id, LOCAL))?.state, "running", "the run waits");

  const decided = JSON.parse(
    await decideElsewhere(home.path, approval.approval_id, "approve", { by: "alice" }),
  ) as ApprovalRecord;
  assert.equal(decided.state, "approved");
  assert.equal(decided.decided_by, "alice");

  const end = await s.runs.wait(run.run_id, LOCAL);
  assert.equal(end.state, "succeeded");
  assert.deepEqual(end.result, { answer: "fake response to: deploy the release" });
  const journal = await s.runs.journal(run.run_id, LOCAL);
  assert.deepEqual(
    journal.map((e) => [e.outcome, e.sandbox, e.sandbox_clamped]),
    [["live", "full", undefined]],
  );
  const approvals = (await Array.fromAsync(s.runs.events(run.run_id, LOCAL)))
    .map((item) => item.event)
    .filter((event) => event.type === "approval")
    .map((event) => event.state);
  assert.deepEqual(approvals, ["pending", "approved"]);

  const resumed = await s.runs.start(
    { script: FULL_CALL, fake_dispatch: true, sandbox_max: "full", resume_from: run.run_id },
    LOCAL,
  );
  const again = await s.runs.wait(resumed.run_id, LOCAL);
  assert.equal(again.state, "succeeded");
  assert.equal(again.calls.replayed, 1);
  assert.equal((await s.approvals.list(LOCAL)).length, 1, "the replayed call asked nothing");
});

Deno.test("a call waiting for approval holds no concurrency slot: the run's other calls go on", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const run = await s.runs.start({
    script: `return await parallel([
      () => agent("deploy", { sandbox: "full" }),
      () => agent("plain one"),
      () => agent("plain two"),
    ]);`,
    fake_dispatch: true,
    sandbox_max: "full",
    concurrency: 1,
    timeout: 30,
  }, LOCAL);
  const waiting = await pendingApproval(s, run.run_id);
  // Both plain calls end while the first one still waits: the wait takes no slot.
  const ended = new Set<number>();
  for await (const { event } of s.runs.events(run.run_id, LOCAL)) {
    if (event.type === "call") ended.add(event.seq);
    if (ended.has(2) && ended.has(3)) break;
  }
  assert.equal((await s.approvals.get(waiting.approval_id, LOCAL))?.state, "pending");
  await s.approvals.decide(waiting.approval_id, LOCAL, "approve");
  const end = await s.runs.wait(run.run_id, LOCAL);
  assert.deepEqual(end.result, [
    "fake response to: deploy",
    "fake response to: plain one",
    "fake response to: plain two",
  ]);
});

Deno.test("a denied call returns null to its script, and the journal and narration say who denied it", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  // A second services instance on the same home: a dashboard beside the run's host.
  await using other = await openServices({ home: home.path, recoverEveryMs: 60_000 });
  const run = await s.runs.start(
    { script: FULL_CALL, fake_dispatch: true, sandbox_max: "full" },
    LOCAL,
  );
  const waiting = await pendingApproval(s, run.run_id);
  const denied = await other.approvals.decide(waiting.approval_id, LOCAL, "deny", {
    by: "alice",
    reason: "not on a Friday",
  });
  assert.equal(denied.state, "denied");

  const end = await s.runs.wait(run.run_id, LOCAL);
  assert.equal(end.state, "succeeded");
  assert.deepEqual(end.result, { answer: null });
  assert.equal(end.failures.forbidden, 1);
  const [entry] = await s.runs.journal(run.run_id, LOCAL);
  assert.equal(entry?.outcome, "failed");
  assert.equal(
    entry?.reason,
    `the full sandbox was denied by alice (approval ${waiting.approval_id}): not on a Friday`,
  );
  assert.match(
    narration(end, "call").join("\n"),
    /agent call #1 \(deploy\) failed: the full sandbox was denied by alice/,
  );
});

Deno.test("a dispatch task under ask waits with its status and feed saying so, and runs with full once approved", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const task = await s.tasks.start(
    { prompt: "rotate the keys", sandbox: "full", fake_dispatch: true, label: "keys" },
    LOCAL,
  );
  const approvalId = await taskWaiting(s, task.task_id);
  const byTask = await s.approvals.get(task.task_id, LOCAL);
  assert.equal(byTask?.approval_id, approvalId);
  assert.equal(byTask?.kind, "dispatch");
  assert.equal(byTask?.label, "keys");

  const decided = JSON.parse(
    await decideElsewhere(home.path, task.task_id, "approve", { by: "alice" }),
  ) as ApprovalRecord;
  assert.equal(decided.approval_id, approvalId);

  const end = await s.tasks.wait(task.task_id, LOCAL);
  assert.equal(end.state, "succeeded");
  assert.equal(end.sandbox, "full");
  assert.equal(end.waiting_for_approval, undefined);
  const events = (await Array.fromAsync(s.tasks.events(task.task_id, LOCAL))).map((i) => i.event);
  // The call's live output (progress events) comes between the approval and the end.
  assert.deepEqual(
    events.filter((e) => !e.progress).map((e) =>
      e.approval ? `approval ${e.approval.state}` : e.state
    ),
    ["queued", "running", "approval pending", "approval approved", "succeeded"],
  );
});

Deno.test("a denied dispatch task fails with forbidden, naming the denial", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const task = await s.tasks.start(
    { prompt: "rotate the keys", sandbox: "full", fake_dispatch: true },
    LOCAL,
  );
  const approvalId = await taskWaiting(s, task.task_id);
  await s.approvals.decide(task.task_id, LOCAL, "deny", { by: "alice", reason: "no" });
  const end = await s.tasks.wait(task.task_id, LOCAL);
  assert.equal(end.state, "failed");
  assert.deepEqual(end.error, {
    code: "forbidden",
    message: `Cannot dispatch: the full sandbox was denied by alice (approval ${approvalId}): no`,
  });
  assert.equal(end.sandbox, null, "nothing was dispatched");
});

Deno.test("cancelling a run or a task that waits for approval ends it and cancels the approval", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const run = await s.runs.start(
    { script: FULL_CALL, fake_dispatch: true, sandbox_max: "full" },
    LOCAL,
  );
  const waiting = await pendingApproval(s, run.run_id);
  await s.runs.cancel(run.run_id, LOCAL);
  const end = await s.runs.wait(run.run_id, LOCAL);
  assert.equal(end.state, "cancelled");
  const approval = await s.approvals.get(waiting.approval_id, LOCAL);
  assert.equal(approval?.state, "cancelled");
  assert.match(approval?.reason ?? "", /the call stopped waiting: cancelled by local/);
  const late = await failure(() => s.approvals.decide(waiting.approval_id, LOCAL, "approve"));
  assert.equal(late.code, "conflict");
  assert.match(late.message, /its call stopped waiting/);
  const [entry] = await s.runs.journal(run.run_id, LOCAL);
  assert.equal(entry?.outcome, "failed");
  assert.match(entry?.reason ?? "", /the run stopped while the call waited for approval/);

  const task = await s.tasks.start(
    { prompt: "p", sandbox: "full", fake_dispatch: true },
    LOCAL,
  );
  const taskApproval = await taskWaiting(s, task.task_id);
  const cancelled = await s.tasks.cancel(task.task_id, LOCAL);
  assert.equal(cancelled.state, "cancelled");
  assert.equal((await s.approvals.get(taskApproval, LOCAL))?.state, "cancelled");
});

Deno.test("deciding twice answers the first decision; the opposite decision is a conflict", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const task = await s.tasks.start(
    { prompt: "p", sandbox: "full", fake_dispatch: true },
    LOCAL,
  );
  const approvalId = await taskWaiting(s, task.task_id);
  const first = await s.approvals.decide(approvalId, LOCAL, "approve", { by: "alice" });
  const second = await s.approvals.decide(task.task_id, LOCAL, "approve", { by: "carol" });
  assert.deepEqual(second, first, "the same decision again answers the stored one");
  const opposite = await failure(() => s.approvals.decide(approvalId, LOCAL, "deny"));
  assert.deepEqual(opposite, {
    code: "conflict",
    message: `Cannot deny approval ${approvalId}: it was approved already by alice`,
  });
  assert.equal((await s.tasks.wait(task.task_id, LOCAL)).state, "succeeded");
});

Deno.test("another owner's approval answers exactly like an unknown one; an administrator sees it", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const task = await s.tasks.start(
    { prompt: "p", sandbox: "full", fake_dispatch: true },
    LOCAL,
  );
  const approvalId = await taskWaiting(s, task.task_id);
  assert.deepEqual(await s.approvals.list(BOB), []);
  assert.equal(await s.approvals.get(approvalId, BOB), undefined);
  assert.equal(await s.approvals.get(task.task_id, BOB), undefined);
  const unknown = newId("apr");
  const theirs = await failure(() => s.approvals.decide(approvalId, BOB, "approve"));
  const none = await failure(() => s.approvals.decide(unknown, BOB, "approve"));
  assert.deepEqual(
    { ...theirs, message: theirs.message.replace(approvalId, "<id>") },
    { ...none, message: none.message.replace(unknown, "<id>") },
  );
  assert.equal(none.code, "not_found");
  assert.equal((await s.approvals.get(approvalId, LOCAL))?.state, "pending", "bob changed nothing");
  assert.deepEqual((await s.approvals.list(ADMIN)).map((a) => a.approval_id), [approvalId]);
  await s.approvals.decide(approvalId, ADMIN, "deny");
  assert.equal((await s.tasks.wait(task.task_id, LOCAL)).state, "failed");
});

Deno.test("a run whose ceiling is write never asks: its full call is clamped to write", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const run = await s.runs.start(
    { script: FULL_CALL, fake_dispatch: true, sandbox_max: "write" },
    LOCAL,
  );
  const end = await s.runs.wait(run.run_id, LOCAL);
  assert.equal(end.state, "succeeded");
  const [entry] = await s.runs.journal(run.run_id, LOCAL);
  assert.equal(entry?.sandbox, "write");
  assert.match(entry?.sandbox_clamped ?? "", /^full was clamped to write: the ceiling is write/);
  assert.deepEqual(await s.approvals.list(LOCAL), []);
});

Deno.test("the dispatcher never grants full under ask without an approval", async () => {
  const dispatcher = createDispatcher({ config: ASK, fakeLatencyMs: 0 });
  const signal = new AbortController().signal;
  const refused = await failure(() =>
    dispatcher.dispatch({ prompt: "p", options: { sandbox: "full" }, signal })
  );
  assert.equal(refused.code, "forbidden");
  assert.match(refused.message, /sandbox\.full is ask, and no person approved this call/);
  const approved = await dispatcher.dispatch(
    { prompt: "p", options: { sandbox: "full" }, signal },
    { fullApproved: true },
  );
  assert.equal(approved.sandbox, "full");
  assert.equal(dispatcher.admit({ sandbox: "full" }).needsApproval, true);
  assert.equal(dispatcher.admit({ sandbox: "full" }, { sandboxMax: "write" }).level, "write");
});

Deno.test("sandbox.full defaults to deny; allow_full is its older spelling; contradicting spellings are refused", () => {
  assert.deepEqual(ConfigSchema.parse({}).sandbox, { full: "deny" });
  assert.deepEqual(ConfigSchema.parse({ sandbox: { allow_full: true } }).sandbox, {
    full: "allow",
  });
  assert.deepEqual(ConfigSchema.parse({ sandbox: { allow_full: false } }).sandbox, {
    full: "deny",
  });
  assert.deepEqual(
    ConfigSchema.parse({ sandbox: { allow_full: true, full: "allow" } }).sandbox,
    { full: "allow" },
  );
  const bad = ConfigSchema.safeParse({ sandbox: { allow_full: true, full: "ask" } });
  assert.equal(bad.success, false);
  assert.deepEqual(bad.error?.issues[0]?.path, ["sandbox", "allow_full"]);
  assert.match(
    bad.error?.issues[0]?.message ?? "",
    /older spelling of sandbox\.full and says 'allow', but sandbox\.full says 'ask'/,
  );
  assert.equal(ConfigSchema.safeParse({ sandbox: { full: "sometimes" } }).success, false);
});

Deno.test("under allow and deny a full call never waits: granted, or clamped to write", async () => {
  for (const [full, level] of [["allow", "full"], ["deny", "write"]] as const) {
    await using home = await tempDir();
    const config = ConfigSchema.parse({ sandbox: { full } });
    await using s = await openServices({
      home: home.path,
      config,
      dispatcher: createDispatcher({ config, fakeLatencyMs: 0 }),
    });
    const run = await s.runs.start(
      { script: FULL_CALL, fake_dispatch: true, sandbox_max: "full" },
      LOCAL,
    );
    assert.equal((await s.runs.wait(run.run_id, LOCAL)).state, "succeeded");
    assert.equal((await s.runs.journal(run.run_id, LOCAL))[0]?.sandbox, level, full);
    assert.deepEqual(await s.approvals.list(LOCAL), [], full);
  }
});

Deno.test("approvals list pending ones first, newest first, in pages; a pending approval of an ended run is cancelled when seen", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  const done = await s.runs.start({ script: "return 1", fake_dispatch: true }, LOCAL);
  await s.runs.wait(done.run_id, LOCAL);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const id = newId("apr");
    ids.push(id);
    await s.ledger.createApproval({
      approval_id: id,
      owner: "local",
      state: "pending",
      kind: "dispatch",
      prompt_preview: `prompt ${i}\u001b[31m ${"x".repeat(600)}`,
      sandbox: "full",
      asked_at: new Date().toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  // ids[0] and ids[2] decided; the other three pending.
  await s.ledger.decideApproval(ids[0]!, { state: "approved", by: "alice" });
  await s.ledger.decideApproval(ids[2]!, { state: "denied", by: "alice" });
  const order = [ids[4], ids[3], ids[1], ids[2], ids[0]];
  assert.deepEqual((await s.approvals.list(LOCAL)).map((a) => a.approval_id), order);
  const pages: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await s.approvals.list(LOCAL, { limit: 2, ...(cursor ? { cursor } : {}) });
    if (page.length === 0) break;
    pages.push(...page.map((a) => a.approval_id));
    cursor = page.at(-1)!.approval_id;
  }
  assert.deepEqual(pages, order);
  assert.deepEqual(
    (await s.approvals.list(LOCAL, { state: "denied" })).map((a) => a.approval_id),
    [ids[2]],
  );
  const shown = (await s.approvals.get(ids[1]!, LOCAL))!.prompt_preview;
  assert.ok(!shown.includes("\u001b"), "control characters are removed");
  assert.ok(shown.length < 560, `the preview is bounded (${shown.length})`);
  assert.equal(
    (await failure(() => s.approvals.list(LOCAL, { limit: 0 }))).code,
    "invalid_argument",
  );
  assert.equal(
    (await failure(() => s.approvals.list(LOCAL, { cursor: "../x" }))).code,
    "invalid_argument",
  );

  // A call whose run ended without deciding (its host died) is cancelled the first time it is seen.
  const orphan = newId("apr");
  await s.ledger.createApproval({
    approval_id: orphan,
    owner: "local",
    state: "pending",
    kind: "call",
    run_id: done.run_id,
    call_seq: 1,
    prompt_preview: "p",
    sandbox: "full",
    asked_at: new Date().toISOString(),
  });
  const seen = await s.approvals.get(orphan, LOCAL);
  assert.equal(seen?.state, "cancelled");
  assert.match(seen?.reason ?? "", /the run ended \(succeeded\) while it waited/);
});

Deno.test("the command line's narration says when a call waits for approval and how it was decided", () => {
  const lines: string[] = [];
  const printer = createNarrationPrinter({ line: (text) => lines.push(text) });
  const at = new Date().toISOString();
  const base = { type: "approval", run_id: "run_x", at, approval_id: "apr_1", seq: 2 } as const;
  printer.onEvent({ ...base, state: "pending", label: "deploy" });
  printer.onEvent({ ...base, state: "denied", label: null });
  assert.deepEqual(lines, [
    "? agent call #2 (deploy) waits for a person to approve its full sandbox: approval apr_1",
    "? agent call #2: approval apr_1 denied",
  ]);
});

Deno.test("two people deciding at once: exactly one decision is recorded, the other is told", async () => {
  await using home = await tempDir();
  await using s = await askServices(home.path);
  await using other = await openServices({ home: home.path, recoverEveryMs: 60_000 });
  for (let round = 0; round < 5; round++) {
    const id = newId("apr");
    await s.ledger.createApproval({
      approval_id: id,
      owner: "local",
      state: "pending",
      kind: "dispatch",
      prompt_preview: "p",
      sandbox: "full",
      asked_at: new Date().toISOString(),
    });
    const outcomes = await Promise.allSettled([
      s.approvals.decide(id, LOCAL, "approve", { by: "alice" }),
      other.approvals.decide(id, LOCAL, "deny", { by: "bob" }),
    ]);
    const won = outcomes.filter((o) => o.status === "fulfilled");
    assert.equal(won.length, 1, "one decision wins");
    const lost = outcomes.find((o) => o.status === "rejected");
    assert.ok(lost?.reason instanceof SvcError && lost.reason.code === "conflict");
    const stored = await s.ledger.getApproval(id);
    assert.equal(stored?.state, (won[0] as PromiseFulfilledResult<ApprovalRecord>).value.state);
  }
});
