/**
 * The chaos test: a real `svc dashboard` process serving runs, dispatches, sessions and board
 * writes is killed with SIGKILL at random moments (from a printed seed) and restarted on the same
 * SVC_HOME, again and again. After every restart the ledger must hold everything a client was
 * told: no run stuck `running`, every call an event stream showed in the journal exactly once, no
 * event a client received gone or renumbered, no card, task or session lost or doubled. At the
 * end every interrupted run is resumed to exactly what an uncrashed run of its script returns.
 *
 * `SVC_CHAOS_SEED=<n>` replays a seed; `SVC_CHAOS_KILLS=<n>` changes the number of kills.
 */
import assert from "node:assert/strict";
import { tempDir } from "./helpers.ts";
import { type HostProcess, startHostProcess } from "./host_process.ts";
import { tokenClient } from "./token_client.ts";

const SEED = Number(Deno.env.get("SVC_CHAOS_SEED") ?? 20261123);
const KILLS = Number(Deno.env.get("SVC_CHAOS_KILLS") ?? 30);
const TOKEN = "chaos-token-0123456789abcdef";
const CALLS = 8;

/** The scripts the test runs: a sequential chain and a fan-out of `CALLS` calls each. */
const SCRIPTS = {
  sequential: `const out = [];
for (let i = 0; i < ${CALLS}; i++) out.push(await agent("step " + i, { label: "step " + i }));
return out;`,
  fanout: `return await parallel(
  Array.from({ length: ${CALLS} }, (_, i) => () => agent("branch " + i, { label: "branch " + i })),
);`,
} as const;
type ScriptName = keyof typeof SCRIPTS;

/** A small seeded generator (mulberry32): the kills and the work are the seed's alone. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An event as a client received it over SSE. */
interface SeenEvent {
  id: number;
  event: string;
  data: string;
}

/** What the clients were told: the test's side of the ledger. */
interface Told {
  /** Runs by id: their script, and the events a subscriber received. */
  runs: Map<string, { script: ScriptName; events: SeenEvent[] }>;
  /** Chains of runs (a run and its resumes), by script. */
  chains: Array<{ script: ScriptName; runs: string[] }>;
  /** Card titles to the issue id the write answered. */
  cards: Map<string, string>;
  /** Task ids a dispatch answered. */
  tasks: Set<string>;
  /** Session ids a create answered. */
  sessions: Set<string>;
}

/** Requests to a host with the test's token. */
function client(host: HostProcess) {
  return tokenClient(host.url, TOKEN);
}

/** Reads an SSE response into `into` until it ends or breaks (the host was killed). */
async function readStream(response: Response, into: SeenEvent[]): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: (\d+)$/m.exec(block)?.[1];
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (id !== undefined && event !== undefined && data !== undefined) {
          into.push({ id: Number(id), event, data });
        }
      }
    }
  } catch {
    // The connection broke with the host: what arrived before counts.
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** A run's whole stored feed, read from the start on a live host (it ends with the run). */
async function storedFeed(host: HostProcess, runId: string): Promise<SeenEvent[]> {
  const events: SeenEvent[] = [];
  const response = await client(host).request(`/api/workflow/${runId}/events`);
  assert.equal(response.status, 200);
  await readStream(response, events);
  return events;
}

/** The checks after a restart: everything the clients were told is there, once. */
async function checkLedger(host: HostProcess, told: Told, round: number): Promise<number> {
  const api = client(host);
  const where = `after restart ${round} (seed ${SEED})`;
  const runs = await api.all("/api/workflow", "runs");
  for (const run of runs) {
    assert.ok(
      run.state !== "running" && run.state !== "queued",
      `${where}: run ${run.run_id} is ${run.state} on a host that is gone`,
    );
  }
  const listed = new Set(runs.map((run) => String(run.run_id)));
  const interrupted = runs.filter((run) => run.state === "interrupted").length;
  for (const [runId, { events }] of told.runs) {
    assert.ok(listed.has(runId), `${where}: run ${runId} was started and is gone`);
    const journal = await api.json(`/api/workflow/${runId}/journal`);
    const entries = journal.body.entries as Array<
      { seq: number; outcome: string; position: unknown }
    >;
    const seqs = entries.map((entry) => entry.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `${where}: ${runId} journal seqs`);
    const positions = entries.map((entry) => JSON.stringify(entry.position));
    assert.equal(new Set(positions).size, positions.length, `${where}: ${runId} positions`);
    for (const seen of events.filter((event) => event.event === "call")) {
      const call = JSON.parse(seen.data) as { seq: number; outcome: string };
      const entry = entries.find((e) => e.seq === call.seq);
      assert.equal(
        entry?.outcome,
        call.outcome,
        `${where}: ${runId} call #${call.seq} was streamed and is not in the journal as streamed`,
      );
    }
    const stored = await storedFeed(host, runId);
    const ids = stored.map((event) => event.id);
    assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), `${where}: ${runId} event ids`);
    const byId = new Map(stored.map((event) => [event.id, event]));
    for (const seen of events) {
      assert.deepEqual(
        byId.get(seen.id),
        seen,
        `${where}: ${runId} event ${seen.id} was received and is not stored as received`,
      );
    }
  }
  const cards = await api.all("/api/board", "cards");
  const titles = cards.map((card) => String(card.title));
  assert.equal(new Set(titles).size, titles.length, `${where}: a card was written twice`);
  const numbers = cards.map((card) => String(card.issue_id));
  assert.equal(new Set(numbers).size, numbers.length, `${where}: two cards share a number`);
  for (const [title, issueId] of told.cards) {
    const card = cards.find((c) => c.title === title);
    assert.equal(card?.issue_id, issueId, `${where}: card '${title}' was answered and is gone`);
  }
  const tasks = await api.all("/api/tasks", "tasks");
  const taskIds = tasks.map((task) => String(task.task_id));
  assert.equal(new Set(taskIds).size, taskIds.length, `${where}: a task is listed twice`);
  for (const task of tasks) {
    assert.notEqual(task.state, "running", `${where}: task ${task.task_id} stuck running`);
  }
  for (const taskId of told.tasks) {
    assert.ok(taskIds.includes(taskId), `${where}: task ${taskId} was answered and is gone`);
  }
  const sessions = await api.all("/api/sessions", "sessions");
  const sessionIds = sessions.map((session) => String(session.session_id));
  assert.equal(new Set(sessionIds).size, sessionIds.length, `${where}: a session twice`);
  for (const sessionId of told.sessions) {
    assert.ok(sessionIds.includes(sessionId), `${where}: session ${sessionId} is gone`);
  }
  return interrupted;
}

/** Starts a run of `script` (or resumes `from`) and follows its events in the background. */
async function startRun(
  host: HostProcess,
  told: Told,
  options: { script: ScriptName; from?: string },
): Promise<{ runId: string; following: Promise<void> } | undefined> {
  const api = client(host);
  const answer = options.from
    ? await api.json(`/api/workflow/${options.from}/resume`, {})
    : await api.json("/api/workflow/run", { script: SCRIPTS[options.script], fake_dispatch: true });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  const runId = String(answer.body.run_id);
  const events: SeenEvent[] = [];
  told.runs.set(runId, { script: options.script, events });
  const following = api.request(`/api/workflow/${runId}/events`)
    .then((response) => readStream(response, events), () => {});
  return { runId, following };
}

/** One round of work on a live host; returns once it is all sent (the kill may come first). */
async function work(host: HostProcess, told: Told, next: () => number, round: number) {
  const api = client(host);
  const pending: Promise<unknown>[] = [];
  const keep = (promise: Promise<unknown>) => {
    // Examined once the kill is over; never an unhandled rejection meanwhile.
    promise.catch(() => {});
    pending.push(promise);
  };
  // Resume the chains whose last run ended short of success.
  for (const chain of told.chains) {
    const last = chain.runs.at(-1)!;
    const status = (await api.json(`/api/workflow/${last}`)).body;
    if (status.state === "succeeded") continue;
    if (status.state === "running" || status.state === "queued") continue;
    const started = await startRun(host, told, { script: chain.script, from: last });
    if (started) {
      chain.runs.push(started.runId);
      keep(started.following);
    }
  }
  if (told.chains.filter((c) => c.runs.length > 0).length < 24) {
    const script: ScriptName = next() < 0.5 ? "sequential" : "fanout";
    const started = await startRun(host, told, { script });
    if (started) {
      told.chains.push({ script, runs: [started.runId] });
      keep(started.following);
    }
  }
  keep((async () => {
    for (let i = 0; i < 3; i++) {
      const title = `card ${round}.${i}`;
      const written = await api.json("/api/board/write", { action: "new", mode: "apply", title });
      assert.equal(written.status, 200, JSON.stringify(written.body));
      told.cards.set(title, String((written.body.card as { issue_id: string }).issue_id));
    }
  })());
  keep((async () => {
    const task = await api.json("/api/dispatch", {
      prompt: `task ${round}`,
      fake_dispatch: true,
    });
    assert.equal(task.status, 202, JSON.stringify(task.body));
    told.tasks.add(String(task.body.task_id));
    const session = await api.json("/api/sessions", { name: `session-${round}` });
    assert.equal(session.status, 201, JSON.stringify(session.body));
    told.sessions.add(String(session.body.session_id));
  })());
  return pending;
}

/** Whether an error is the kill breaking a request in flight (and not a failed check). */
function brokenByKill(error: unknown): boolean {
  return error instanceof TypeError;
}

Deno.test(`a dashboard killed with SIGKILL ${KILLS} times loses no run, call, event, card, task or session`, async () => {
  console.log(`chaos seed ${SEED} (SVC_CHAOS_SEED=${SEED} replays it), ${KILLS} kills`);
  const next = random(SEED);
  await using home = await tempDir("svc-chaos-");
  await Deno.writeTextFile(`${home.path}/dashboard.token`, TOKEN, { mode: 0o600 });
  const env = { SVC_FAKE_LATENCY_MS: "60" };
  const told: Told = {
    runs: new Map(),
    chains: [],
    cards: new Map(),
    tasks: new Set(),
    sessions: new Set(),
  };

  // What an uncrashed run of each script returns.
  const expected = new Map<ScriptName, unknown>();
  {
    await using host = await startHostProcess(home.path, "dashboard", { env });
    for (const script of Object.keys(SCRIPTS) as ScriptName[]) {
      const started = await startRun(host, told, { script });
      await started!.following;
      const status = (await client(host).json(`/api/workflow/${started!.runId}`)).body;
      assert.equal(status.state, "succeeded", JSON.stringify(status.error));
      expected.set(script, status.result);
      told.chains.push({ script, runs: [started!.runId] });
    }
  }

  let interrupted = 0;
  for (let round = 1; round <= KILLS; round++) {
    const host = await startHostProcess(home.path, "dashboard", { env });
    try {
      await checkLedger(host, told, round - 1);
      const delay = 150 + Math.floor(next() * 850);
      const killer = new Promise((resolve) => setTimeout(resolve, delay))
        .then(() => host.stop("SIGKILL"));
      const sent = work(host, told, next, round);
      const pending = await sent.catch((error) => {
        if (!brokenByKill(error)) throw error;
        return [];
      });
      const code = await killer;
      assert.equal(code, 137, `round ${round}: the host was killed`);
      for (const result of await Promise.allSettled(pending)) {
        if (result.status === "rejected" && !brokenByKill(result.reason)) throw result.reason;
      }
    } finally {
      await host.stop("SIGKILL");
    }
  }

  // The last host lives: every chain is resumed until it succeeds.
  await using host = await startHostProcess(home.path, "dashboard", { env });
  const killedMidRun = await checkLedger(host, told, KILLS);
  // The kills must have hit runs in flight, or the test proved nothing about them.
  assert.ok(killedMidRun > 0, "no kill interrupted a run");
  const api = client(host);
  for (const chain of told.chains) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const last = chain.runs.at(-1)!;
      const status = (await api.json(`/api/workflow/${last}`)).body;
      if (status.state === "succeeded") {
        assert.deepEqual(status.result, expected.get(chain.script), `chain of ${chain.runs[0]}`);
        const journal = (await api.json(`/api/workflow/${last}/journal`)).body.entries as Array<
          { outcome: string }
        >;
        assert.equal(journal.length, CALLS, "every call of the script once in the last run");
        break;
      }
      assert.equal(status.state, "interrupted", `${last}: ${JSON.stringify(status.error)}`);
      interrupted++;
      const started = await startRun(host, told, { script: chain.script, from: last });
      chain.runs.push(started!.runId);
      await started!.following;
    }
    const final = (await api.json(`/api/workflow/${chain.runs.at(-1)}`)).body;
    assert.equal(final.state, "succeeded", `chain of ${chain.runs[0]} never finished`);
  }
  await checkLedger(host, told, KILLS + 1);
  console.log(
    `chaos: ${KILLS} kills survived; ${killedMidRun} runs interrupted; ` +
      `${told.runs.size} runs in ${told.chains.length} chains ` +
      `(${interrupted} resumed at the end), ${told.cards.size} cards, ${told.tasks.size} tasks, ` +
      `${told.sessions.size} sessions, ` +
      `${[...told.runs.values()].reduce((n, run) => n + run.events.length, 0)} events received`,
  );
});
