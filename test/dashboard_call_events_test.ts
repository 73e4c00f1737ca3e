/**
 * `GET /api/workflow/{run_id}/calls/{seq}/events` in process: a page of a call's output as
 * JSON with `after` paging, the same followed live as server-sent events until the call ends,
 * 404 for another owner (like an unknown run) and for a call the run never made, 400 for a
 * malformed number.
 */
import assert from "node:assert/strict";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

type Batch = { feed_seq: number; items: Array<{ kind: string; text?: string }> };

Deno.test("a call's output: JSON pages, a live event stream that ends with the call, owner isolation", async () => {
  await using d = await startDashboard({ fakeLatencyMs: 400 });
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("tell me a story");`, fake_dispatch: true },
  });
  const runId = String(started.body.run_id);
  const path = `/api/workflow/${runId}/calls/1/events`;

  // Followed live while the call runs: its text arrives in batches, then `done`.
  const live = await readEvents(
    await d.request(path, { token: TOKENS.alice, headers: { accept: "text/event-stream" } }),
  );
  const batches = live.filter((e) => e.event === "progress");
  assert.ok(batches.length >= 2, `the output arrived in ${batches.length} batches`);
  assert.equal(
    batches.flatMap((e) => (e.data as Batch).items).map((i) => i.text).join(""),
    "fake response to: tell me a story",
  );
  assert.equal(batches[0]!.id, String((batches[0]!.data as Batch).feed_seq));
  assert.equal(live.at(-1)?.event, "done");

  // As JSON: the same batches, the call ended; `after` pages on.
  const page = await d.json(path, { token: TOKENS.alice });
  assert.equal(page.status, 200);
  assert.equal(page.body.done, true);
  const events = page.body.events as Batch[];
  assert.deepEqual(events, batches.map((e) => e.data));
  const rest = await d.json(`${path}?after=${events[0]!.feed_seq}&limit=1`, {
    token: TOKENS.alice,
  });
  assert.deepEqual(rest.body.events, [events[1]]);
  // Done only when nothing of the call lies beyond the page.
  assert.equal(rest.body.done, events.length === 2);
  const first = await d.json(`${path}?limit=1`, { token: TOKENS.alice });
  assert.equal(first.body.done, false);
  // A stream resumed after the last batch has only `done`.
  const resumed = await readEvents(
    await d.request(path, {
      token: TOKENS.alice,
      headers: { accept: "text/event-stream", "last-event-id": String(events.at(-1)!.feed_seq) },
    }),
  );
  assert.deepEqual(resumed.filter((e) => e.event).map((e) => e.event), ["done"]);

  // Another owner: 404 on both forms, exactly as an unknown run.
  const other = await d.json(path, { token: TOKENS.bob });
  const unknown = await d.json("/api/workflow/run_01zzzzzzzzzzzzzzzz/calls/1/events", {
    token: TOKENS.bob,
  });
  assert.equal(other.status, 404);
  assert.equal(unknown.status, 404);
  assert.equal(
    (other.body.error as { code: string }).code,
    (unknown.body.error as { code: string }).code,
  );
  const otherStream = await d.request(path, {
    token: TOKENS.bob,
    headers: { accept: "text/event-stream" },
  });
  assert.equal(otherStream.status, 404);
  await otherStream.body?.cancel();
  // A call the ended run never made; a malformed number.
  await readEvents(await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }));
  assert.equal(
    (await d.json(`/api/workflow/${runId}/calls/2/events`, { token: TOKENS.alice }))
      .status,
    404,
  );
  assert.equal(
    (await d.json(`/api/workflow/${runId}/calls/x/events`, { token: TOKENS.alice }))
      .status,
    400,
  );
  assert.equal((await d.json(`${path}?after=-1`, { token: TOKENS.alice })).status, 400);
});
