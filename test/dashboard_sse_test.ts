import assert from "node:assert/strict";
import { type ReadEvent, readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

const PACED = `
phase("steps");
const out = [];
for (let i = 0; i < 6; i++) {
  log("step " + i);
  out.push(await agent("step " + i, { label: "step " + i }));
}
return out.length;
`;

async function startPaced(d: Awaited<ReturnType<typeof startDashboard>>): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: PACED, fake_dispatch: true },
  });
  assert.equal(started.status, 202);
  return String(started.body.run_id);
}

function ids(events: ReadEvent[]): number[] {
  return events.filter((e) => e.id !== undefined).map((e) => Number(e.id));
}

Deno.test("an SSE client that disconnects and reconnects with Last-Event-ID misses no event and sees none twice", async () => {
  await using d = await startDashboard({ fakeLatencyMs: 40 });
  const runId = await startPaced(d);
  const path = `/api/workflow/${runId}/events`;
  const seen: ReadEvent[] = [];
  let last: string | undefined;
  let connections = 0;
  // Drop the connection after every third event until the stream ends.
  while (true) {
    connections++;
    const response = await d.request(path, {
      token: TOKENS.alice,
      ...(last !== undefined ? { headers: { "last-event-id": last } } : {}),
    });
    if (response.status === 204) break;
    assert.equal(response.status, 200);
    const events = await readEvents(response, {
      until: (_event, all) => all.filter((e) => e.id !== undefined).length === 3,
    });
    assert.equal(events[0]?.retry, 2000, "retry: comes first");
    const got = events.filter((e) => e.id !== undefined);
    seen.push(...got);
    last = got.at(-1)?.id ?? last;
    if (
      got.some((e) => e.event === "state" && (e.data as { state: string }).state === "succeeded")
    ) {
      // The stream is over: resuming after its last event answers 204 (no reconnect).
      const after = await d.request(path, {
        token: TOKENS.alice,
        headers: { "last-event-id": last! },
      });
      assert.equal(after.status, 204);
      break;
    }
  }
  assert.ok(connections > 3, `reconnected ${connections} times`);
  const all = ids(seen);
  assert.deepEqual(all, all.map((_, i) => i), "ids 0..n once each, in order");
  // The whole stream read at once is the same sequence of events.
  const whole = await readEvents(await d.request(path, { token: TOKENS.alice }));
  assert.deepEqual(
    whole.filter((e) => e.id !== undefined).map((e) => [e.id, e.event, e.data]),
    seen.map((e) => [e.id, e.event, e.data]),
  );
  const names = new Set(seen.map((e) => e.event));
  for (const name of ["state", "narration", "call"]) assert.ok(names.has(name), name);
});

Deno.test("an id the stream does not hold gets a reset event, then the stream from its start", async () => {
  await using d = await startDashboard();
  const runId = await startPaced(d);
  for (const bad of ["999999", "abc", "-1"]) {
    const events = await readEvents(
      await d.request(`/api/workflow/${runId}/events`, {
        token: TOKENS.alice,
        headers: { "last-event-id": bad },
      }),
    );
    const first = events.find((e) => e.event !== undefined);
    assert.equal(first?.event, "reset", bad);
    assert.equal(first?.id, undefined, "a reset carries no id");
    const all = ids(events);
    assert.deepEqual(all, all.map((_, i) => i), `${bad}: the stream from 0`);
  }
  // `?after=` works as Last-Event-ID does, for clients that cannot set headers.
  const after = await readEvents(
    await d.request(`/api/workflow/${runId}/events?after=2`, { token: TOKENS.alice }),
  );
  assert.equal(ids(after)[0], 3);
});

Deno.test("a quiet stream sends keep-alive comments, and closing the server ends open streams", async () => {
  const d = await startDashboard({ port: true, fakeLatencyMs: 60_000, keepAliveMs: 30 });
  try {
    const runId = await startPaced(d);
    const events = await readEvents(
      await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }),
      { until: (e) => e.comment === "keep-alive" },
    );
    assert.equal(events.at(-1)?.comment, "keep-alive");
    // A stream left open does not keep the server from closing.
    const open = await d.request(
      `/api/dispatch/${
        (await d.json("/api/dispatch", {
          token: TOKENS.alice,
          body: { prompt: "slow", fake_dispatch: true },
        })).body.task_id
      }/events`,
      { token: TOKENS.alice },
    );
    const reading = readEvents(open);
    await d.server.close();
    const read = await reading;
    assert.ok(read.length >= 1);
  } finally {
    await d[Symbol.asyncDispose]();
  }
});

Deno.test("a dispatch's events stream its states and end with the terminal one", async () => {
  await using d = await startDashboard();
  const task = await d.json("/api/dispatch", {
    token: TOKENS.alice,
    body: { prompt: "hello", fake_dispatch: true },
  });
  const taskId = String(task.body.task_id);
  const events = await readEvents(
    await d.request(`/api/dispatch/${taskId}/events`, { token: TOKENS.alice }),
  );
  const states = events.filter((e) => e.event === "state").map((e) =>
    (e.data as { state: string }).state
  );
  assert.deepEqual(states, ["queued", "running", "succeeded"]);
  const status = await d.json(`/api/dispatch/${taskId}`, { token: TOKENS.alice });
  assert.equal(status.body.state, "succeeded");
  assert.match(String(status.body.result), /hello/);
});
