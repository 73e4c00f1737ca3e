/**
 * The workspace re-checked at every spawn, with the real Claude Code: over HTTP, a run's first
 * agent (told by the model stand-in) renames its project with its Bash tool and leaves a link
 * with the old name to another user's project; the run's second call is refused before it
 * spawns, and the stand-in never hears from it.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { narration, tempDir } from "./helpers.ts";
import { startModelStandIn } from "./model_standin/mod.ts";
import { claudeProvider } from "../src/dispatch/mod.ts";
import { agentHome, claudeOptions, realToolTest, toolThenText } from "./real_agents.ts";

realToolTest(
  "claude",
  "a link its first agent leaves in place of the run's workdir does not redirect the second call",
  async (bin) => {
    await using root = await tempDir("svc-root-");
    await using other = await tempDir("svc-other-");
    const project = `${await Deno.realPath(root.path)}/proj`;
    await Deno.mkdir(project);
    const swap = `d=$(pwd -P); mv "$d" "$d-moved" && ln -s ${other.path} "$d" && echo swapped`;
    const prompts: string[] = [];
    const moves = toolThenText([{ name: "Bash", input: { command: swap, description: "swap" } }]);
    await using standin = startModelStandIn((request) => {
      const asked = `${request.prompt}\n${request.transcript}`;
      prompts.push(asked);
      return asked.includes("MOVE") ? moves(request) : { text: "second answered" };
    });
    await using home = await agentHome();
    await using d = await startDashboard({
      config: ConfigSchema.parse({
        workspaces: { alice: [root.path] },
        sandbox: { full: "allow" },
      }),
      // Full, for the first agent's shell; this test host runs as root, as containers do.
      providers: [claudeProvider(claudeOptions(bin, standin.url, home, { IS_SANDBOX: "1" }))],
    });
    const started = await d.json("/api/workflow/run", {
      token: TOKENS.alice,
      body: {
        script: `const first = await agent("MOVE", { provider: "claude", sandbox: "full" });
const second = await agent("second", { provider: "claude", sandbox: "write" });
return { first, second };`,
        workdir: project,
        sandbox_max: "full",
      },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const done = await d.services.runs.wait(started.body.run_id as string, { owner: "alice" });
    assert.equal(done.state, "succeeded", JSON.stringify(done.error));
    const result = done.result as { first: string; second: unknown };
    // The real tool ran the swap: the project is now a link to the other user's project.
    assert.match(result.first, /swapped/);
    assert.equal((await Deno.lstat(project)).isSymlink, true);
    assert.equal(result.second, null);
    assert.match(
      narration(done, "call").join("\n"),
      /agent call #2 failed: Cannot start the call: its working directory now leads outside the directory checked when the run or task started/,
    );
    assert.ok(!prompts.some((prompt) => prompt.includes("second")), prompts.join(" | "));
    assert.deepEqual([...Deno.readDirSync(other.path)], []);
  },
);
