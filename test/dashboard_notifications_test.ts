/**
 * `GET /api/notifications` and `POST /api/notifications/read` through the dashboard app: each
 * owner sees and marks only its own (another owner's ids mark nothing), pages follow the cursor,
 * the general event stream announces what makes one, and every bound answers 400.
 */
import assert from "node:assert/strict";
import { startDashboard, type TestDashboard, TOKENS } from "./dashboard_helpers.ts";

async function failRun(d: TestDashboard, token: string): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token,
    body: { script: `throw new Error("boom")`, fake_dispatch: true },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  const owner = token === TOKENS.alice ? "alice" : "bob";
  await d.services.runs.wait(runId, { owner });
  return runId;
}

type Page = {
  notifications: Array<{ id: string; run_id: string; read: boolean; kind: string }>;
  next_cursor: string | null;
  unread: number;
};

Deno.test("each owner sees and marks only its own notifications, a page at a time", async () => {
  await using d = await startDashboard();
  const aliceRuns = [await failRun(d, TOKENS.alice), await failRun(d, TOKENS.alice)];
  const ok = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return 1`, fake_dispatch: true },
  });
  await d.services.runs.wait(String(ok.body.run_id), { owner: "alice" });
  const bobRun = await failRun(d, TOKENS.bob);

  const first = await d.json("/api/notifications?limit=1", { token: TOKENS.alice });
  assert.equal(first.status, 200);
  const page1 = first.body as unknown as Page;
  assert.equal(page1.notifications.length, 1);
  assert.equal(page1.notifications[0]!.run_id, aliceRuns[1]);
  assert.equal(page1.unread, 2);
  assert.ok(page1.next_cursor);
  const second = (await d.json(`/api/notifications?limit=1&cursor=${page1.next_cursor}`, {
    token: TOKENS.alice,
  })).body as unknown as Page;
  assert.deepEqual(second.notifications.map((n) => n.run_id), [aliceRuns[0]]);
  assert.equal(second.next_cursor, null);

  const bob = (await d.json("/api/notifications", { token: TOKENS.bob })).body as unknown as Page;
  assert.deepEqual(bob.notifications.map((n) => n.run_id), [bobRun]);
  // Bob names Alice's ids, up_to and all: nothing of hers changes.
  const aliceIds = [page1.notifications[0]!.id, second.notifications[0]!.id];
  for (const body of [{ ids: aliceIds }, { up_to: aliceIds[0] }]) {
    const marked = await d.json("/api/notifications/read", { token: TOKENS.bob, body });
    assert.equal(marked.status, 200);
    assert.equal(marked.body.marked, 0);
  }
  assert.equal(
    (await d.json("/api/notifications/read", { token: TOKENS.bob, body: { all: true } }))
      .body.marked,
    1,
  );
  // Alice's cursor is no cursor of Bob's.
  const foreign = await d.json(`/api/notifications?cursor=${page1.next_cursor}`, {
    token: TOKENS.bob,
  });
  assert.equal(foreign.status, 400);
  const alice = (await d.json("/api/notifications", { token: TOKENS.alice }))
    .body as unknown as Page;
  assert.equal(alice.unread, 2);
  assert.ok(alice.notifications.every((n) => !n.read));

  const one = await d.json("/api/notifications/read", {
    token: TOKENS.alice,
    body: { ids: [aliceIds[0]] },
  });
  assert.deepEqual(one.body, { marked: 1, unread: 1 });
  const unread = (await d.json("/api/notifications?unread=true", { token: TOKENS.alice }))
    .body as unknown as Page;
  assert.deepEqual(unread.notifications.map((n) => n.run_id), [aliceRuns[0]]);
  const rest = await d.json("/api/notifications/read", {
    token: TOKENS.alice,
    body: { all: true },
  });
  assert.deepEqual(rest.body, { marked: 1, unread: 0 });
});

Deno.test("the notification routes refuse what is out of bounds, and need a token", async () => {
  await using d = await startDashboard();
  assert.equal((await d.request("/api/notifications")).status, 401);
  const cases: Array<[string, unknown]> = [
    ["/api/notifications?limit=101", undefined],
    ["/api/notifications?limit=0", undefined],
    ["/api/notifications?cursor=ntf_zz", undefined],
    ["/api/notifications?unread=maybe", undefined],
    ["/api/notifications/read", {}],
    ["/api/notifications/read", { ids: [] }],
    ["/api/notifications/read", {
      ids: Array.from({ length: 101 }, (_, i) => `ntf_0123456789ab_${i}`),
    }],
    ["/api/notifications/read", { ids: ["../../etc"] }],
    ["/api/notifications/read", { all: false }],
    ["/api/notifications/read", { all: true, ids: ["ntf_0123456789ab_1"] }],
  ];
  for (const [path, body] of cases) {
    const answer = await d.json(path, {
      token: TOKENS.alice,
      ...(body !== undefined ? { body } : {}),
    });
    assert.equal(
      answer.status,
      400,
      `${path} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`,
    );
    assert.equal((answer.body.error as { code: string }).code, "invalid_request");
  }
});

Deno.test("the general event stream announces an approval wait, which the notifications list", async () => {
  const { ConfigSchema } = await import("../src/config/mod.ts");
  const config = ConfigSchema.parse({ sandbox: { full: "ask" } });
  await using d = await startDashboard({ config });
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: `return await agent("deploy", { sandbox: "full" })`,
      fake_dispatch: true,
      sandbox_max: "full",
    },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const controller = new AbortController();
  const response = await d.request("/api/events", {
    token: TOKENS.alice,
    signal: controller.signal,
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/event: approval\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  controller.abort();
  await reader.cancel().catch(() => {});
  assert.match(text, /event: approval\n/);
  const page = (await d.json("/api/notifications", { token: TOKENS.alice }))
    .body as unknown as Page;
  assert.deepEqual(page.notifications.map((n) => n.kind), ["approval"]);
  await d.json(`/api/workflow/${started.body.run_id}/cancel`, { token: TOKENS.alice, body: {} });
  await d.services.runs.wait(String(started.body.run_id), { owner: "alice" });
});
