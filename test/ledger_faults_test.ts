import assert from "node:assert/strict";
import { denoCommand, fixture, tempDir } from "./helpers.ts";
import { type HostProcess, startHostProcess } from "./host_process.ts";

const TOKEN = "ledger-faults-token-0123456789";

/** Sequential calls whose results (2 KB each) make every commit grow the ledger's log. */
const STEPS = `
  const out = [];
  for (let i = 0; i < args.n; i++) out.push(await agent("step " + i + " " + "x".repeat(2000)));
  return out.map((text) => text.length);
`;

/** This Deno's cache directory. */
async function denoDir(): Promise<string> {
  const output = await denoCommand({ args: ["info", "--json"] }).output();
  return String(JSON.parse(new TextDecoder().decode(output.stdout)).denoDir);
}

/** A JSON request to a host with the test's token; the status and the parsed body. */
async function call(
  host: HostProcess,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${host.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * A real `svc dashboard` whose SVC_HOME is an 8 MiB tmpfs in a mount namespace of its own (made
 * by bubblewrap: no root needed), with "fill" and "free" commands on its standard input.
 *
 * The guests' scratch directories (`$SVC_HOME/tmp`) are on a tmpfs of their own: the host
 * removes a guest's scratch (about 20 KiB: its import map and bootstrap) when the guest has
 * ended, at a moment of its own, so on the small disk the run interrupted by the fill would free
 * that much after it, and a small commit (a board card: one to three WAL pages) would then find
 * room and be answered 200, as it should when it is durable. Only what the ledger and the board
 * write is on the disk that is filled, so a write made after the fill meets a full disk.
 */
async function smallDiskHost(home: string, options: { latencyMs: number }): Promise<HostProcess> {
  const bwrap = Deno.env.get("SVC_TEST_BWRAP") ?? "bwrap";
  return await startHostProcess(home, "dashboard", {
    // Deno's cache stays where it is: the small disk is the ledger's alone.
    env: {
      SVC_FAKE_LATENCY_MS: String(options.latencyMs),
      SVC_TEST_TOKEN: TOKEN,
      DENO_DIR: await denoDir(),
    },
    prefix: [
      bwrap,
      "--bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--size",
      String(8 * 1024 * 1024),
      "--tmpfs",
      home,
      "--tmpfs",
      `${home}/tmp`,
      "--die-with-parent",
      "sh",
      fixture("faults/small_disk.sh"),
    ],
    stdin: true,
  });
}

/** Sends a command to a small-disk host and waits for its answer. */
async function disk(host: HostProcess, command: "fill" | "free"): Promise<void> {
  await host.stdin!.write(new TextEncoder().encode(`${command}\n`));
  await line(host, command === "fill" ? "disk: filled" : "disk: freed");
}

/** Polls a run until it has ended (any state but queued and running). */
async function ended(host: HostProcess, runId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const { body } = await call(host, `/api/workflow/${runId}`);
    if (body.state !== "queued" && body.state !== "running") return body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`run ${runId} did not end`);
}

/**
 * Runs `n` steps once to the end (what an unharmed run returns), then starts them again and
 * resolves once the second run has journaled two calls: the fault comes in the middle of it.
 */
async function twoRuns(
  host: HostProcess,
  n: number,
): Promise<{ whole: Record<string, unknown>; runId: string }> {
  const start = async () => {
    const started = await call(host, "/api/workflow/run", {
      script: STEPS,
      args: { n },
      fake_dispatch: true,
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    return String(started.body.run_id);
  };
  const whole = await ended(host, await start());
  assert.equal(whole.state, "succeeded");
  const runId = await start();
  for (let i = 0; i < 200; i++) {
    const { body } = await call(host, `/api/workflow/${runId}`);
    if ((body.journal as { calls: number }).calls >= 2) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { whole, runId };
}

/** Waits for a line of the host's standard error. */
async function line(host: HostProcess, text: string): Promise<void> {
  for (let i = 0; i < 600 && !host.lines.includes(text); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(host.lines.includes(text), host.lines.join("\n"));
}

Deno.test("a full disk under the ledger interrupts the run with a clear error, refuses writes with 503, and the run resumes once space is back", async () => {
  await using home = await tempDir("svc-small-disk-");
  const host = await smallDiskHost(home.path, { latencyMs: 40 });
  try {
    const { whole, runId } = await twoRuns(host, 12);
    await disk(host, "fill");
    const broken = await ended(host, runId);
    assert.equal(broken.state, "interrupted", JSON.stringify(broken.error));
    assert.deepEqual(broken.error, {
      code: "ledger_unavailable",
      message:
        "Cannot write the ledger: the disk is full; the journal up to the failure is kept: resume the run with resume_from",
    });

    // Writes are refused clearly while the disk is full; reads go on.
    const card = await call(host, "/api/board/write", {
      action: "new",
      mode: "apply",
      title: "written on a full disk",
    });
    assert.equal(card.status, 503, JSON.stringify(card.body));
    assert.deepEqual(card.body.error, {
      status: 503,
      code: "unavailable",
      message: "Cannot write the ledger: the disk is full",
    });
    assert.equal((await call(host, "/api/status")).status, 200);

    await disk(host, "free");
    // The refused card was not made, half or whole: the board holds no card yet.
    const board = await call(host, "/api/board");
    assert.equal(board.status, 200, JSON.stringify(board.body));
    assert.deepEqual(board.body.cards, []);
    // The ledger records the end as soon as it takes writes, from the record it committed: its
    // counters match its journal.
    let recorded: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++) {
      recorded = (await call(host, `/api/workflow/${runId}`)).body;
      const entries = (await call(host, `/api/workflow/${runId}/journal`)).body;
      const journal = recorded.journal as { calls: number };
      if (
        recorded.state === "interrupted" &&
        journal.calls === (entries.entries as unknown[]).length
      ) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(recorded.state, "interrupted");
    const kept = (recorded.journal as { calls: number }).calls;
    assert.ok(kept >= 2 && kept < 12, `calls journaled before the disk filled: ${kept}`);

    const resumed = await call(host, `/api/workflow/${runId}/resume`, {});
    assert.equal(resumed.status, 202, JSON.stringify(resumed.body));
    const finished = await ended(host, String(resumed.body.run_id));
    assert.equal(finished.state, "succeeded", JSON.stringify(finished.error));
    assert.deepEqual(finished.result, whole.result);
    assert.equal((finished.journal as { replayed: number }).replayed, kept);
    const written = await call(host, "/api/board/write", {
      action: "new",
      mode: "apply",
      title: "written once space is back",
    });
    assert.equal(written.status, 200, JSON.stringify(written.body));
    assert.equal((written.body.card as { issue_id: string }).issue_id, "1");
  } finally {
    assert.equal(await host.stop(), 0, host.lines.join("\n"));
  }
});

Deno.test("a ledger locked by another program interrupts the run with a clear error, and the run resumes once the lock is gone", async () => {
  await using home = await tempDir("svc-locked-");
  await Deno.writeTextFile(`${home.path}/dashboard.token`, TOKEN, { mode: 0o600 });
  await using host = await startHostProcess(home.path, "dashboard", {
    env: { SVC_FAKE_LATENCY_MS: "40" },
  });
  const { whole, runId } = await twoRuns(host, 8);
  const locker = denoCommand({
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      fixture("faults/lock_ledger.ts"),
      `${home.path}/svc.kv`,
    ],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const said = locker.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    assert.equal((await said.read()).value?.trim(), "locked");
    const broken = await ended(host, runId);
    assert.equal(broken.state, "interrupted", JSON.stringify(broken.error));
    assert.deepEqual(broken.error, {
      code: "ledger_unavailable",
      message:
        "Cannot write the ledger: another process holds it locked; the journal up to the failure is kept: resume the run with resume_from",
    });
  } finally {
    await locker.stdin.close();
    await said.cancel();
    await locker.status;
  }
  // At once, and after the ledger recorded the end: the counters are those of the journal.
  let recorded = (await call(host, `/api/workflow/${runId}`)).body;
  assert.equal(
    (recorded.journal as { calls: number }).calls,
    ((await call(host, `/api/workflow/${runId}/journal`)).body.entries as unknown[]).length,
  );
  for (let i = 0; i < 200; i++) {
    const events = await fetch(`${host.url}/api/workflow/${runId}/events`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const text = await events.text();
    if (text.includes('"state":"interrupted"')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  recorded = (await call(host, `/api/workflow/${runId}`)).body;
  assert.equal(recorded.state, "interrupted");
  const kept = (recorded.journal as { calls: number }).calls;
  const entries = (await call(host, `/api/workflow/${runId}/journal`)).body.entries as unknown[];
  assert.equal(entries.length, kept, "the recorded counters match the journal");
  const resumed = await call(host, `/api/workflow/${runId}/resume`, {});
  assert.equal(resumed.status, 202, JSON.stringify(resumed.body));
  const finished = await ended(host, String(resumed.body.run_id));
  assert.equal(finished.state, "succeeded", JSON.stringify(finished.error));
  assert.deepEqual(finished.result, whole.result);
  assert.equal((finished.journal as { replayed: number }).replayed, kept);
});

Deno.test("a task that ends while the disk is full answers its end from memory and saves it once space is back", async () => {
  await using home = await tempDir("svc-small-disk-task-");
  const host = await smallDiskHost(home.path, { latencyMs: 1_500 });
  try {
    const task = await call(host, "/api/dispatch", { prompt: "slow", fake_dispatch: true });
    assert.equal(task.status, 202, JSON.stringify(task.body));
    const taskId = String(task.body.task_id);
    // The task must have started (its claim is a write) before the disk fills.
    let status: Record<string, unknown> = {};
    for (let i = 0; i < 300 && status.state !== "running"; i++) {
      status = (await call(host, `/api/tasks/${taskId}`)).body;
      if (status.state !== "running") await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(status.state, "running", JSON.stringify(status));
    await disk(host, "fill");
    for (let i = 0; i < 300; i++) {
      status = (await call(host, `/api/tasks/${taskId}`)).body;
      if (status.state !== "queued" && status.state !== "running") break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(status.state, "succeeded", JSON.stringify(status));
    // The ledger's list still has it running: its end waits for space.
    const listed = (await call(host, "/api/tasks")).body.tasks as Array<Record<string, unknown>>;
    assert.equal(listed.find((t) => t.task_id === taskId)?.state, "running");
    await disk(host, "free");
    for (let i = 0; i < 300; i++) {
      const tasks = (await call(host, "/api/tasks")).body.tasks as Array<Record<string, unknown>>;
      status = tasks.find((t) => t.task_id === taskId) ?? {};
      if (status.state === "succeeded") break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status.state, "succeeded", "the end reached the ledger");
    assert.equal(status.result, "fake response to: slow");
  } finally {
    assert.equal(await host.stop(), 0, host.lines.join("\n"));
  }
});
