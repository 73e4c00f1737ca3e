/**
 * Live output of the real coding agents against the stand-in model server: a real Claude Code
 * call's tool uses (a Read, a Write with its file) and its text come out as progress events
 * while it runs, and a workflow run records them in the run's feed under the call.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { CallProgress } from "../src/schemas/mod.ts";
import { harnessRequest } from "./harness_helpers.ts";
import { feedOf, LOCAL, testManager } from "./helpers.ts";
import { startModelStandIn } from "./model_standin/mod.ts";
import { agentHome, claudeAt, realToolTest, toolThenText } from "./real_agents.ts";

const USAGE = { input: 100, output: 20, cacheRead: 0, cacheWrite: 0 };

realToolTest(
  "claude",
  "a call's tool uses, its written file and its text come out as progress events",
  async (bin) => {
    await using home = await agentHome();
    await Deno.writeTextFile(`${home.work}/README.md`, "hello\n");
    const notes = `${home.work}/NOTES.md`;
    const standin = startModelStandIn(toolThenText([
      { name: "Read", input: { file_path: `${home.work}/README.md` } },
      { name: "Write", input: { file_path: notes, content: "new\n" } },
    ], USAGE));
    try {
      const seen: CallProgress[] = [];
      const result = await claudeAt(bin, standin.url, home).dispatch(
        harnessRequest("read and write", {
          cwd: home.work,
          sandbox: "write",
          onProgress: (event) => seen.push(event),
        }),
      );
      assert.match(String(result.output), /^tool said: /);
      assert.equal(await Deno.readTextFile(notes), "new\n");
      const tools = seen.filter((e) => e.kind === "tool");
      assert.deepEqual(tools, [
        { kind: "tool", name: "Read", target: `${home.work}/README.md` },
        { kind: "tool", name: "Write", target: notes },
      ]);
      assert.ok(seen.some((e) => e.kind === "file" && e.path === notes && e.change === "write"));
      const text = seen.map((e) => e.kind === "text" ? e.text : "").join("");
      assert.match(text, /tool said: /);
      // The tool uses came before the answer's text, in the order Claude Code made them.
      const firstText = seen.findIndex((e) => e.kind === "text");
      assert.ok(seen.findIndex((e) => e.kind === "tool") < firstText);
    } finally {
      await standin.close();
    }
  },
);

realToolTest(
  "claude",
  "a workflow run records a real call's tool use in its feed, before the call's own event",
  async (bin) => {
    await using home = await agentHome();
    const standin = startModelStandIn(toolThenText([
      { name: "Bash", input: { command: "echo progress-marker", description: "say it" } },
    ], USAGE));
    try {
      await using t = await testManager({
        dispatcher: createDispatcher({ providers: [claudeAt(bin, standin.url, home)] }),
      });
      const run = await t.manager.start({
        script: `return await agent("run it", { provider: "claude", sandbox: "full" })`,
        workdir: home.work,
        sandbox_max: "full",
      }, LOCAL);
      const status = await t.manager.wait(run.run_id, LOCAL);
      assert.equal(status.state, "succeeded", JSON.stringify(status.error));
      const events = await feedOf(t.manager, run.run_id);
      const items = events.flatMap((e) => e.type === "progress" && e.seq === 1 ? e.items : []);
      assert.ok(
        items.some((i) =>
          i.kind === "tool" && i.name === "Bash" && i.target === "echo progress-marker"
        ),
        JSON.stringify(items),
      );
      const page = await t.manager.callEvents(run.run_id, 1, LOCAL);
      assert.equal(page.done, true);
      assert.deepEqual(page.events.flatMap((e) => e.items), items);
    } finally {
      await standin.close();
    }
  },
);
