import assert from "node:assert/strict";
import { createUnsafeLocalBackend } from "../src/isolation/mod.ts";
import { runGuest } from "../src/engine/mod.ts";
import { makeScratchDir, scratchOwner, sweepScratch } from "../src/scratch/mod.ts";
import { denoCommand, exists, fixture, tempDir, testManager } from "./helpers.ts";

/** A real process that made a scratch directory under `root` and lives until stopped. */
async function scratchOwnerProcess(root: string) {
  const child = denoCommand({
    args: ["run", "--allow-read", "--allow-write", fixture("scratch_owner.ts"), root],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const path = text.trim();
  assert.ok(path.startsWith(`${root}/guest-`), `no scratch directory: ${text}`);
  return {
    path,
    pid: child.pid,
    /** Lets the process end and waits for it. */
    async stop() {
      await child.stdin.close();
      await reader.cancel();
      await child.status;
    },
  };
}

Deno.test("the next host removes the scratch directories of a host that is gone, and keeps a live host's", async () => {
  await using home = await tempDir("svc-home-");
  const root = `${home.path}/tmp`;
  const gone = await scratchOwnerProcess(root);
  await gone.stop();
  const live = await scratchOwnerProcess(root);
  try {
    {
      await using _t = await testManager({ home: home.path });
      assert.equal(await exists(gone.path), false, "the dead host's directory is left");
      assert.equal(await exists(live.path), true, "a live host's directory was removed");
    }
  } finally {
    await live.stop();
  }
  {
    await using _t = await testManager({ home: home.path });
    assert.equal(await exists(live.path), false, "its host has ended since");
  }
});

Deno.test("where start times can be read, a directory whose pid now belongs to another process is removed", async () => {
  await using dir = await tempDir();
  const output = await denoCommand({
    args: ["run", "--allow-all", fixture("scratch_reuse.ts"), dir.path],
    stderr: "inherit",
  }).output();
  assert.equal(output.code, 0);
  const seen = JSON.parse(new TextDecoder().decode(output.stdout));
  assert.ok(seen.owner.start > 0, "the start time of a process is readable with --allow-all");
  assert.deepEqual(seen.removed, [seen.earlier]);
  assert.deepEqual(seen.left, [seen.mine]);
});

Deno.test("where start times cannot be read (deno run without --allow-all), the pid alone decides", async () => {
  await using dir = await tempDir();
  const mine = await makeScratchDir(dir.path, { prefix: "call-" });
  assert.deepEqual(scratchOwner(mine.slice(dir.path.length + 1)), { pid: Deno.pid, start: 0 });
  await Deno.mkdir(`${dir.path}/call-${Deno.pid}.12345-other`);
  assert.deepEqual(await sweepScratch(dir.path), []);
});

Deno.test("a directory without an owner is removed only once older than any run may last", async () => {
  await using dir = await tempDir();
  const days = (n: number) => new Date(Date.now() - n * 24 * 3600 * 1000);
  await Deno.mkdir(`${dir.path}/guest-old`);
  await Deno.utime(`${dir.path}/guest-old`, days(9), days(9));
  await Deno.mkdir(`${dir.path}/call-week`);
  await Deno.utime(`${dir.path}/call-week`, days(7), days(7));
  await Deno.mkdir(`${dir.path}/guest-fresh`);
  await Deno.writeTextFile(`${dir.path}/a-file`, "kept");
  await Deno.utime(`${dir.path}/a-file`, days(30), days(30));
  assert.deepEqual(await sweepScratch(dir.path), [`${dir.path}/guest-old`]);
  assert.deepEqual([...Deno.readDirSync(dir.path)].map((e) => e.name).sort(), [
    "a-file",
    "call-week",
    "guest-fresh",
  ]);
});

Deno.test("a guest's scratch directory is named after its host", async () => {
  await using dir = await tempDir();
  let names: string[] = [];
  const outcome = await runGuest({
    backend: createUnsafeLocalBackend(),
    scratchRoot: dir.path,
    body: `return await agent("look");`,
    filename: "look.js",
    args: { given: false },
    budget: { total: null, unit: "tokens" },
    signal: new AbortController().signal,
    handlers: {
      agent: () => {
        names = [...Deno.readDirSync(dir.path)].map((e) => e.name);
        return Promise.resolve({ value: "seen", spent: 0 });
      },
      workflow: () => Promise.reject(new Error("none")),
      phase: () => {},
      log: () => {},
      itemError: () => {},
      output: () => {},
      security: () => {},
    },
  });
  assert.deepEqual(outcome, { kind: "returned", value: "seen" });
  assert.equal(names.length, 1);
  assert.ok(names[0]!.startsWith("guest-"));
  assert.equal(scratchOwner(names[0]!)?.pid, Deno.pid);
  assert.deepEqual([...Deno.readDirSync(dir.path)], [], "removed when the run ends");
});
