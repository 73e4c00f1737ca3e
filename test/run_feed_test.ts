/**
 * Runs seen from another process: a run started by one `svc` process is listed, followed
 * (with a reader that disconnects and resumes), cancelled and waited for by another process
 * on the same SVC_HOME, through the services and the event feed.
 */
import assert from "node:assert/strict";
import { endsStream, type FeedItem, type RunEvent } from "../src/ledger/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { denoCommand, fixture, LOCAL, ROOT, runCli, svcCommand, tempDir } from "./helpers.ts";

/** Starts `svc workflow run` in a process of its own; resolves with its exit status and output. */
function startCliRun(
  home: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ done: Promise<{ code: number; stdout: string; stderr: string }> }> {
  const child = svcCommand({
    args: ["workflow", "run", ...args],
    env: { SVC_HOME: home, NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const done = child.output().then((out) => ({
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  }));
  return Promise.resolve({ done });
}

/** The run another process started, once it is listed as running. */
async function runningRun(services: Services): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const [run] = await services.runs.list(LOCAL, { states: ["running"] });
    if (run) return run.run_id;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("no run started");
}

Deno.test("a run started by another process is listed, followed across a disconnect without loss or repeat, and waited for", async () => {
  await using home = await tempDir();
  const cli = await startCliRun(
    home.path,
    [fixture("paced.js"), "--args", '{"steps":6}', "--fake-dispatch"],
    { SVC_FAKE_LATENCY_MS: "150" },
  );
  await using services = await openServices({ home: home.path });
  const runId = await runningRun(services);
  const listed = await services.runs.list(LOCAL);
  assert.deepEqual(listed.map((r) => [r.run_id, r.name]), [[runId, "paced"]]);

  // A reader that disconnects after a few events, then resumes from the last one it saw.
  const seen: FeedItem<RunEvent>[] = [];
  const first = new AbortController();
  for await (const item of services.runs.events(runId, LOCAL, { signal: first.signal })) {
    seen.push(item);
    if (item.event.type === "narration" && item.event.entry.text === "step 2") first.abort();
  }
  assert.ok(!endsStream(seen.at(-1)!.event), "disconnected before the end");
  for await (const item of services.runs.events(runId, LOCAL, { after: seen.at(-1)!.seq })) {
    seen.push(item);
  }
  const final = await services.runs.wait(runId, LOCAL);
  assert.equal(final.state, "succeeded");
  assert.equal(final.result, 6);

  // Every event once, in order, and the same as a full replay after the end.
  assert.deepEqual(seen.map((item) => item.seq), seen.map((_, i) => i));
  const replay = await Array.fromAsync(services.runs.events(runId, LOCAL));
  assert.deepEqual(replay, seen);
  const logs = seen.flatMap(({ event }) =>
    event.type === "narration" && event.entry.kind === "log" ? [event.entry.text] : []
  );
  assert.deepEqual(logs, ["step 0", "step 1", "step 2", "step 3", "step 4", "step 5"]);
  assert.deepEqual(
    seen.at(-1)?.event,
    { type: "state", run_id: runId, at: final.ended_at, state: "succeeded" },
  );
  const out = await cli.done;
  assert.equal(out.code, 0, out.stderr);
});

Deno.test("a run is cancelled from another process: its host stops it, and the cancel is idempotent", async () => {
  await using home = await tempDir();
  const cli = await startCliRun(
    home.path,
    [fixture("paced.js"), "--args", '{"steps":50}', "--fake-dispatch"],
    { SVC_FAKE_LATENCY_MS: "60000" },
  );
  await using services = await openServices({ home: home.path });
  const runId = await runningRun(services);
  const asked = await services.runs.cancel(runId, LOCAL);
  assert.equal(asked.state, "running", "the run was still running when the cancel was asked");
  const ended = await services.runs.wait(runId, LOCAL);
  assert.equal(ended.state, "cancelled");
  assert.deepEqual(ended.error, { code: "cancelled", message: "cancelled on request" });
  assert.deepEqual(
    await services.runs.cancel(runId, LOCAL),
    ended,
    "cancelling again changes nothing",
  );
  const out = await cli.done;
  assert.equal(out.code, 1);
  assert.match(out.stderr, new RegExp(`svc: run ${runId} cancelled on request\n`));
});

Deno.test("svc workflow list, status, journal, watch and cancel work on runs of another process", async () => {
  await using home = await tempDir();
  const env = { SVC_FAKE_LATENCY_MS: "60000" };
  const cli = await startCliRun(
    home.path,
    [fixture("paced.js"), "--args", '{"steps":50}', "--fake-dispatch"],
    env,
  );
  await using services = await openServices({ home: home.path });
  const runId = await runningRun(services);
  const opts = { home: home.path, env };

  const list = await runCli(["workflow", "list"], opts);
  assert.equal(list.code, 0, list.stderr);
  const [header, row, ...rest] = list.stdout.trimEnd().split("\n");
  assert.match(header!, /^ID\s+NAME\s+STATE\s+CALLS\s+COST\s+AGE$/);
  assert.match(row!, new RegExp(`^${runId}\\s+paced\\s+running\\s+0\\s+\\$0\\.00\\s+\\d+s$`));
  assert.deepEqual(rest, []);
  const none = await runCli(["workflow", "list", "--state", "succeeded,failed"], opts);
  assert.equal(none.stdout, "No runs.\n");
  const bad = await runCli(["workflow", "list", "--state", "done"], opts);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Cannot use --state 'done': 'done' is no run state/);

  const status = await runCli(["workflow", "status", runId], opts);
  assert.equal(status.code, 0, status.stderr);
  assert.match(
    status.stdout,
    new RegExp(`^run       ${runId} "paced" \\(paced\\.js\\)\nstate     running\n`),
  );
  const json = JSON.parse((await runCli(["workflow", "status", runId, "--json"], opts)).stdout);
  assert.equal(json.run_id, runId);

  // A watcher that stops (SIGINT) says where to resume; the resumed watch sees the end.
  const watcher = svcCommand({
    args: ["workflow", "watch", runId],
    env: { SVC_HOME: home.path, NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Stop the watcher (SIGINT) once it has printed the narration so far: read its standard
  // error as it comes, rather than guessing how long a loaded machine takes to start it.
  const reader = watcher.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let stoppedErr = "";
  const deadline = Date.now() + 30_000;
  while (!/== Steps\nstep 0\n/.test(stoppedErr) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    stoppedErr += value;
  }
  watcher.kill("SIGINT");
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    stoppedErr += value;
  }
  await watcher.stdout.cancel();
  const stopped = await watcher.status;
  assert.equal(stopped.code, 130, stoppedErr);
  assert.match(stoppedErr, /== Steps\nstep 0\n/);
  const hint = /Resume with: svc workflow watch (run_\w+) --after (\d+)/.exec(stoppedErr);
  assert.ok(hint, stoppedErr);
  assert.equal(hint[1], runId);

  const cancel = await runCli(["workflow", "cancel", runId], opts);
  assert.equal(cancel.code, 0, cancel.stderr);
  assert.equal(cancel.stderr, `svc: run ${runId} cancelled\n`);
  const again = await runCli(["workflow", "cancel", runId], opts);
  assert.equal(again.stderr, `svc: run ${runId} had already ended: cancelled\n`);

  const resumed = await runCli(["workflow", "watch", runId, "--after", hint[2]!], opts);
  assert.equal(resumed.code, 1, "a cancelled run's watch exits as its run did");
  assert.doesNotMatch(resumed.stderr, /step 0/, "nothing before --after is repeated");
  assert.match(resumed.stderr, new RegExp(`svc: run ${runId} cancelled on request\n`));

  const journal = await runCli(["workflow", "journal", runId], opts);
  assert.equal(journal.code, 0, journal.stderr);
  assert.match(
    journal.stdout,
    /^SEQ\s+LABEL\s+PHASE\s+PROVIDER\s+OUTCOME\s+TOKENS\s+COST\s+RESULT\n\s+1\s+step 0\s+Steps\s+-\s+failed\s+0\s+\$0\.00\s+the run stopped \(cancelled on request\)\n$/,
  );
  const entries = JSON.parse((await runCli(["workflow", "journal", runId, "--json"], opts)).stdout);
  assert.equal(entries[0].label, "step 0");

  const unknown = await runCli(["workflow", "status", "run_nope"], opts);
  assert.equal(unknown.code, 3);
  assert.equal(unknown.stderr, "svc: Cannot find run 'run_nope': no such run\n");
  assert.equal((await cli.done).code, 1);
});

Deno.test("a long-lived host recovers a run whose host died while it was open, not only at start-up", async () => {
  await using home = await tempDir();
  // Opened first: the start-up recovery has nothing to find.
  await using services = await openServices({ home: home.path, recoverEveryMs: 100 });
  const host = denoCommand({
    args: [
      "run",
      "-A",
      `${ROOT}/cli/main.ts`,
      "workflow",
      "run",
      fixture("paced.js"),
      "--args",
      '{"steps":5}',
      "--fake-dispatch",
    ],
    env: { SVC_HOME: home.path, NO_COLOR: "1", SVC_FAKE_LATENCY_MS: "60000" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const runId = await runningRun(services);
  host.kill("SIGKILL");
  await host.status;
  let state: string | undefined;
  for (let i = 0; i < 400 && state !== "interrupted"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    // Only reads: the periodic recovery, nothing this test calls, marks the run.
    state = (await services.runs.get(runId, LOCAL))?.state;
  }
  assert.equal(state, "interrupted");
  const events = await Array.fromAsync(services.runs.events(runId, LOCAL));
  assert.deepEqual(events.at(-1)?.event.type === "state" && events.at(-1)?.event, {
    type: "state",
    run_id: runId,
    at: (await services.runs.get(runId, LOCAL))?.ended_at,
    state: "interrupted",
  });
});
