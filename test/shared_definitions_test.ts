/**
 * What runs and tasks share: option defaults that an explicit undefined cannot erase, one set
 * of terminal states, one stop class and one structured-output step, defined once.
 */
import assert from "node:assert/strict";
import { createDispatcher, StopReason } from "../src/dispatch/mod.ts";
import { SessionStore, TaskManager } from "../src/tasks/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { isTerminal, openLedger, type TaskState } from "../src/ledger/mod.ts";
import { withDefaults } from "../src/options/mod.ts";
import { LOCAL, ROOT, scriptedProvider, sourceModules, tempDir } from "./helpers.ts";

/** The code of every module of src/ and cli/, without comments. */
async function sources(): Promise<Map<string, string>> {
  const code = new Map<string, string>();
  for (const file of [...await sourceModules("src"), ...await sourceModules("cli")]) {
    code.set(
      file,
      (await Deno.readTextFile(`${ROOT}/${file}`))
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/\/\/.*$/gm, ""),
    );
  }
  return code;
}

Deno.test("withDefaults keeps a default that an option passes as undefined, and takes every other value", () => {
  const merged = withDefaults(
    { concurrency: 8, name: "svc", strict: true },
    { concurrency: undefined, name: "", strict: false, extra: 0 },
  );
  assert.deepEqual(merged, { concurrency: 8, name: "", strict: false, extra: 0 });
  const hostile = withDefaults({ limit: 1 }, JSON.parse('{"__proto__": {"polluted": true}}'));
  assert.equal(Object.getPrototypeOf(hostile), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("a run manager given concurrency and maxAgents as undefined runs parallel agent calls under its defaults", async () => {
  await using home = await tempDir("svc-home-");
  const ledger = await openLedger(home.path);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
    projectDir: home.path,
    concurrency: undefined,
    maxAgents: undefined,
    maxRefusedCalls: undefined,
    heapMb: undefined,
  });
  try {
    const run = await manager.start({
      script: `return await parallel([1, 2, 3].map((n) => () => agent("item " + n)));`,
      fake_dispatch: true,
    }, LOCAL);
    const status = await manager.wait(run.run_id, LOCAL);
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    assert.equal((status.result as unknown[]).length, 3);
    assert.equal(status.calls.succeeded, 3);
  } finally {
    await manager.close();
    ledger.close();
  }
});

Deno.test("a task manager given cancelPollMs as undefined checks for a cancel at its default pace, not continuously", async () => {
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  let reads = 0;
  const getTask = ledger.getTask.bind(ledger);
  ledger.getTask = (taskId) => (reads++, getTask(taskId));
  const slow = scriptedProvider("slow", () => ({ output: "done", delayMs: 600 }));
  const tasks = new TaskManager({
    dispatcher: createDispatcher({ providers: [slow] }),
    ledger,
    sessions: new SessionStore(ledger),
    cancelPollMs: undefined,
  });
  try {
    const started = await tasks.start({ prompt: "work", provider: "slow" }, LOCAL);
    const task = await tasks.wait(started.task_id, LOCAL);
    assert.equal(task.state, "succeeded", JSON.stringify(task.error));
    // 600 ms at one read every 250 ms is two or three reads; undefined would mean every tick.
    assert.ok(reads <= 5, `${reads} reads of the task while it ran`);
  } finally {
    await tasks.close();
    ledger.close();
  }
});

Deno.test("runs and tasks end in the same terminal states", () => {
  const states: TaskState[] = [
    "queued",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "timeout",
    "interrupted",
  ];
  assert.deepEqual(states.filter(isTerminal), [
    "succeeded",
    "failed",
    "cancelled",
    "timeout",
    "interrupted",
  ]);
});

Deno.test("a stop's error code is its state unless a rule names its own", () => {
  assert.equal(new StopReason("cancelled", "the run was cancelled").code, "cancelled");
  assert.equal(
    new StopReason("failed", "a rule", "agent_limit_exceeded").code,
    "agent_limit_exceeded",
  );
});

Deno.test("terminal states, the stop class and the structured-output step are each defined once in src/ and cli/", async () => {
  const offenders: string[] = [];
  for (const [file, code] of await sources()) {
    // A second list of terminal states: a set or array literal naming succeeded and interrupted.
    for (const list of code.matchAll(/(?:new Set\s*(?:<[^>]*>)?\s*\(\s*)?\[[^\]]*\]/g)) {
      if (
        /"succeeded"/.test(list[0]) && /"interrupted"/.test(list[0]) &&
        file !== "src/ledger/records.ts"
      ) offenders.push(`${file}: a list of terminal states`);
    }
    if (/class\s+\w+\s+extends\s+Error\s*\{[^}]*readonly\s+state\s*:/.test(code)) {
      if (file !== "src/dispatch/stop.ts") offenders.push(`${file}: a stop class`);
    }
    if (
      /\bstructuredValue\s*\(/.test(code) && !file.startsWith("src/dispatch/structured_") &&
      file !== "src/structured/structured_output.ts"
    ) {
      offenders.push(`${file}: extracts a structured value outside the structured step`);
    }
  }
  assert.deepEqual(offenders, []);
});
