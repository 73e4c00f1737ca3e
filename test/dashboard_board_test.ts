import assert from "node:assert/strict";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

Deno.test("board write over HTTP: every action, a dry run persisting nothing and answering what apply writes", async () => {
  await using d = await startDashboard();
  const write = (body: Record<string, unknown>, token: string = TOKENS.alice) =>
    d.json("/api/board/write", { token, body });
  const preview = await write({ action: "new", title: "Fix the parser", labels: ["bug"] });
  assert.equal(preview.status, 200);
  assert.equal(preview.body.applied, false);
  assert.deepEqual((await d.json("/api/board", { token: TOKENS.alice })).body.cards, []);
  const created = await write({
    action: "new",
    mode: "apply",
    title: "Fix the parser",
    labels: ["bug"],
  });
  assert.equal(created.body.applied, true);
  const card = created.body.card as {
    issue_id: string;
    state: string;
    owner: string;
    title: string;
  };
  assert.deepEqual([card.state, card.owner, card.title], ["new", "alice", "Fix the parser"]);
  const id = card.issue_id;
  for (const [action, state] of [["take", "taken"], ["log", "taken"], ["done", "done"]]) {
    const dry = await write({ action, issue_id: id, message: `${action} it`, by: "ci" });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    const before = await d.json(`/api/board/${id}`, { token: TOKENS.alice });
    const applied = await write({
      action,
      issue_id: id,
      message: `${action} it`,
      by: "ci",
      mode: "apply",
    });
    assert.equal((applied.body.card as { state: string }).state, state);
    assert.equal(
      (dry.body.card as { state: string }).state,
      state,
      "the dry run shows the same state",
    );
    assert.notDeepEqual(
      before.body,
      (await d.json(`/api/board/${id}`, { token: TOKENS.alice })).body,
    );
  }
  // Transitions that make no sense, unknown cards and bad fields.
  const conflict = await write({ action: "drop", issue_id: id, mode: "apply" });
  assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
  assert.equal((await write({ action: "take", issue_id: "999", mode: "apply" })).status, 404);
  const bad = await write({ action: "new", title: 5 });
  assert.equal(bad.status, 400);
  assert.match(String((bad.body.error as { message: string }).message), /title/);
  // Another owner's card is not found; cancel and drop on fresh cards.
  assert.equal(
    (await write({ action: "take", issue_id: id, mode: "apply" }, TOKENS.bob)).status,
    404,
  );
  assert.equal((await d.json(`/api/board/${id}`, { token: TOKENS.bob })).status, 404);
  for (const action of ["drop", "cancel"]) {
    const other = await write({ action: "new", mode: "apply", title: `to ${action}` });
    const issue = (other.body.card as { issue_id: string }).issue_id;
    assert.equal((await write({ action, issue_id: issue, mode: "apply" })).status, 200);
  }
  const list = await d.json("/api/board?state=done", { token: TOKENS.alice });
  assert.deepEqual((list.body.cards as Array<{ issue_id: string }>).map((c) => c.issue_id), [id]);
});

Deno.test("a board write body holding board_dir answers 403, whatever else it holds", async () => {
  await using d = await startDashboard();
  for (
    const body of [
      { action: "new", title: "x", board_dir: "/tmp/elsewhere" },
      { action: "new", title: 5, board_dir: null, mode: "apply" },
      { board_dir: "/" },
    ]
  ) {
    const answer = await d.json("/api/board/write", { token: TOKENS.alice, body });
    assert.equal(answer.status, 403, JSON.stringify(body));
    assert.equal((answer.body.error as { code: string }).code, "forbidden");
  }
  assert.deepEqual((await d.json("/api/board", { token: TOKENS.alice })).body.cards, []);
});

Deno.test("twenty concurrent board creations over HTTP get twenty different card numbers", async () => {
  await using d = await startDashboard();
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      d.json("/api/board/write", {
        token: i % 2 ? TOKENS.alice : TOKENS.bob,
        body: { action: "new", mode: "apply", title: `card ${i}` },
      })),
  );
  const numbers = answers.map((a) => (a.body.card as { issue_id: string }).issue_id);
  assert.equal(new Set(numbers).size, 20, numbers.join(","));
});

Deno.test("GET /api/events streams the caller's run, task and card changes, and resumes after Last-Event-ID", async () => {
  await using d = await startDashboard();
  const stream = await d.request("/api/events", { token: TOKENS.alice });
  const reading = readEvents(stream, {
    until: (_e, all) =>
      all.some((e) => e.event === "card") &&
      all.some((e) => e.event === "run" && (e.data as { state: string }).state === "succeeded"),
  });
  await d.json("/api/board/write", {
    token: TOKENS.bob,
    body: { action: "new", mode: "apply", title: "bob's" },
  });
  await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("hi");`, fake_dispatch: true },
  });
  await d.json("/api/board/write", {
    token: TOKENS.alice,
    body: { action: "new", mode: "apply", title: "alice's" },
  });
  const events = (await reading).filter((e) => e.id !== undefined);
  assert.ok(
    events.every((e) => (e.data as { owner?: string }).owner !== "bob"),
    "no other owner's",
  );
  const runStates = events.filter((e) => e.event === "run").map((e) =>
    (e.data as { state: string }).state
  );
  assert.deepEqual(runStates, ["queued", "running", "succeeded"]);
  // Resuming after the first event gives the rest, none twice. The two sources interleave as
  // they come, so the ids of a replay may differ; the events may not.
  const key = (e: { event?: string; data?: unknown }) =>
    `${e.event}:${(e.data as { seq: number }).seq}`;
  const rest = await readEvents(
    await d.request("/api/events", {
      token: TOKENS.alice,
      headers: { "last-event-id": events[0]!.id! },
    }),
    { until: (_e, all) => all.filter((e) => e.id !== undefined).length === events.length - 1 },
  );
  assert.deepEqual(
    rest.filter((e) => e.id !== undefined).map(key).sort(),
    events.slice(1).map(key).sort(),
  );
});
