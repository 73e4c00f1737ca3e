import assert from "node:assert/strict";
import { denoPlatform } from "../src/platform/deno.ts";
import { nodePlatform } from "../src/platform/node.ts";
import { type Platform, setPlatform } from "../src/platform/mod.ts";
import { LOCAL, tempDir, testManager } from "./helpers.ts";

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.replace(/\/[^/]+$/, ""), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/**
 * The real platform (`base`), with `swap` done once, the moment the check has resolved
 * (`realPath`) or described (`stat`) `checked`, the file's real path: the swap lands between
 * the check and the read, every time.
 */
function swappingAfterCheck(
  checked: string,
  swap: () => Promise<void>,
  base: Platform = denoPlatform,
  on: "realPath" | "stat" = "realPath",
): Platform {
  let done = false;
  const after = async <T>(path: string, value: T): Promise<T> => {
    if (!done && path === checked) {
      done = true;
      await swap();
    }
    return value;
  };
  return {
    ...base,
    async realPath(path) {
      const real = await base.realPath(path);
      return on === "realPath" ? await after(real, real) : real;
    },
    async stat(path) {
      const info = await base.stat(path);
      return on === "stat" ? await after(path, info) : info;
    },
  };
}

/** Runs `scriptPath` of `project` in a fresh manager with `platform` installed. */
async function runBy(
  scriptPath: string,
  project: string,
  swapping: Platform,
): Promise<{ result?: unknown; error?: string }> {
  await using t = await testManager();
  setPlatform(swapping);
  try {
    const run = await t.manager.start({ scriptPath, workdir: project }, LOCAL);
    const done = await t.manager.wait(run.run_id, LOCAL);
    return done.state === "succeeded" ? { result: done.result } : { error: done.error?.message };
  } catch (error) {
    return { error: (error as Error).message };
  } finally {
    setPlatform(denoPlatform);
  }
}

Deno.test("a run by scriptPath whose project folder is swapped for a link out after the check is refused, and the outside file is never run", async () => {
  await using project = await tempDir();
  await using outside = await tempDir();
  await write(`${project.path}/flows/job.js`, `return "inside";`);
  await write(`${outside.path}/flows/job.js`, `return "outside";`);
  const checked = await Deno.realPath(`${project.path}/flows/job.js`);
  const outcome = await runBy(
    "flows/job.js",
    project.path,
    swappingAfterCheck(checked, async () => {
      await Deno.rename(`${project.path}/flows`, `${project.path}/flows-before`);
      await Deno.symlink(`${outside.path}/flows`, `${project.path}/flows`);
    }),
  );
  assert.notEqual(outcome.result, "outside");
  assert.match(
    outcome.error ?? "",
    /^Cannot start the run: 'flows\/job\.js' changed after it was checked \(a symbolic link or another file now stands on its path\), so it was not read$/,
  );
});

Deno.test("a run by scriptPath whose file is replaced by a link out after the check is refused", async () => {
  await using project = await tempDir();
  await using outside = await tempDir();
  await write(`${project.path}/flows/job.js`, `return "inside";`);
  await write(`${outside.path}/secret.js`, `return "outside";`);
  const checked = await Deno.realPath(`${project.path}/flows/job.js`);
  const outcome = await runBy(
    "flows/job.js",
    project.path,
    swappingAfterCheck(checked, async () => {
      await Deno.remove(checked);
      await Deno.symlink(`${outside.path}/secret.js`, checked);
    }),
  );
  assert.notEqual(outcome.result, "outside");
  assert.match(outcome.error ?? "", /'flows\/job\.js' changed after it was checked/);
});

Deno.test("a run by scriptPath with nothing swapped reads the checked file", async () => {
  await using project = await tempDir();
  await write(`${project.path}/flows/job.js`, `return "inside";`);
  const outcome = await runBy("flows/job.js", project.path, denoPlatform);
  assert.deepEqual(outcome, { result: "inside" });
});

Deno.test("the Node platform's read of a script swapped after its check is refused as well (O_NOFOLLOW and the identity check)", async () => {
  for (const swapFile of [false, true]) {
    await using project = await tempDir();
    await using outside = await tempDir();
    await write(`${project.path}/flows/job.js`, `return "inside";`);
    await write(`${outside.path}/flows/job.js`, `return "outside";`);
    const checked = await Deno.realPath(`${project.path}/flows/job.js`);
    const swap = swapFile
      ? async () => {
        await Deno.remove(checked);
        await Deno.symlink(`${outside.path}/flows/job.js`, checked);
      }
      : async () => {
        await Deno.rename(`${project.path}/flows`, `${project.path}/flows-before`);
        await Deno.symlink(`${outside.path}/flows`, `${project.path}/flows`);
      };
    const outcome = await runBy(
      "flows/job.js",
      project.path,
      swappingAfterCheck(checked, swap, nodePlatform),
    );
    assert.notEqual(outcome.result, "outside");
    assert.match(outcome.error ?? "", /'flows\/job\.js' changed after it was checked/);
  }
});

Deno.test("an agent type whose folder is swapped for a link out after its check is refused, and the outside definition never reaches a call", async () => {
  await using project = await tempDir();
  await using outside = await tempDir();
  const definition = (body: string) => `---\nname: helper\ndescription: helps\n---\n${body}\n`;
  await write(`${project.path}/.claude/agents/helper.md`, definition("inside"));
  await write(`${outside.path}/agents/helper.md`, definition("outside"));
  const checked = await Deno.realPath(`${project.path}/.claude/agents/helper.md`);
  await using t = await testManager();
  const run = await t.manager.start({
    script: `try { await agent("hi", { agentType: "helper" }); return "ran"; }
catch (error) { return String(error.message); }`,
    workdir: project.path,
    fake_dispatch: true,
  }, LOCAL);
  // Armed once the run started: the swap lands once the call's check has measured the file.
  setPlatform(swappingAfterCheck(
    checked,
    async () => {
      await Deno.rename(`${project.path}/.claude/agents`, `${project.path}/.claude/agents-before`);
      await Deno.symlink(`${outside.path}/agents`, `${project.path}/.claude/agents`);
    },
    denoPlatform,
    "stat",
  ));
  try {
    const done = await t.manager.wait(run.run_id, LOCAL);
    assert.equal(done.state, "succeeded", JSON.stringify(done.error));
    assert.match(String(done.result), /agent type helper\.md .* changed after it was checked/);
  } finally {
    setPlatform(denoPlatform);
  }
});
