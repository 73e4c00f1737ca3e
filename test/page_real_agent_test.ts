/**
 * A run of the real Claude Code on the run page in headless Chromium: two parallel calls of the
 * real command line, talking to the stand-in of its model API, each run a Bash tool use; while
 * they run, the page shows each call's live output (its tool line), the graph with running nodes
 * and the timeline with running bars, and once the run ends, the succeeded nodes. The stand-in
 * holds the model's last answer until the page has shown the live state, so nothing depends on
 * timing. Screenshots: `run-real-agent-live`, `run-real-agent-done`.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { TESTED_VERSIONS } from "../src/dispatch/harness/tested_versions.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { startModelStandIn } from "./model_standin/mod.ts";
import type { Responder } from "./model_standin/mod.ts";
import { CHROMIUM, launchBrowser, saveScreenshot, skippableTest } from "./page_helpers.ts";
import { agentBin, agentHome, agentsDir, claudeAt } from "./real_agents.ts";

const USAGE = { input: 100, output: 20, cacheRead: 0, cacheWrite: 0 };

/** The two calls: their labels, and the word their prompt carries for the stand-in to tell them apart. */
const CALLS = [
  { label: "alpha", marker: "task-alpha" },
  { label: "beta", marker: "task-beta" },
] as const;

const SCRIPT = `export const meta = { name: "real agents", phases: ["Work"] };
phase("Work");
return await parallel([
${
  CALLS.map((c) =>
    `  () => agent("do ${c.marker}", { provider: "claude", label: "${c.label}", sandbox: "full" }),`
  ).join("\n")
}
]);
`;

/**
 * The model's side of each call: its first turn runs Bash (`echo <marker>-ran`); the turn that
 * carries the tool's result waits for `gate`, then answers with a text quoting it.
 */
function gatedToolThenText(gate: Promise<void>): Responder {
  return async (request) => {
    if (request.toolResults.length === 0) {
      const call = CALLS.find((c) => request.transcript.includes(c.marker));
      if (call === undefined) return { text: "nothing to do", usage: USAGE };
      const command = `echo ${call.marker}-ran`;
      return {
        toolCalls: [{ name: "Bash", input: { command, description: "say it" } }],
        usage: USAGE,
      };
    }
    await gate;
    return { text: `tool said: ${request.toolResults.map((r) => r.content).join(" | ")}` };
  };
}

/** Why the test cannot run here, if it cannot: no browser, or no real tools. */
function skipReason(): string | undefined {
  if (CHROMIUM.skip !== undefined) return CHROMIUM.skip;
  if (agentsDir() === undefined) {
    return "SVC_TEST_AGENTS is not set (it names the directory of the real coding-agent tools)";
  }
  return undefined;
}

/** Signs in with alice's token, then opens the run's page. */
async function openRun(page: Page, url: string, runId: string): Promise<void> {
  await page.goto(`${url}/#token=${TOKENS.alice}`);
  await page.locator(".who").waitFor();
  await page.evaluate(`location.hash = "#/runs/${runId}"`);
}

skippableTest(
  `real claude ${TESTED_VERSIONS.claude.version}: the run page shows live output, graph and timeline while the real agent runs`,
  async () => {
    const bin = agentBin("claude");
    await using home = await agentHome();
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    await using standin = startModelStandIn(gatedToolThenText(gate));
    await using d = await startDashboard({
      port: true,
      providers: [claudeAt(bin, standin.url, home)],
    });
    // Whatever fails below, the held answers go out, so no call is left hanging on the gate.
    using _released = { [Symbol.dispose]: () => release() };
    const started = await d.json("/api/workflow/run", {
      token: TOKENS.alice,
      body: { script: SCRIPT, sandbox_default: "full", sandbox_max: "full" },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId = String(started.body.run_id);

    await using browser = await launchBrowser();
    const page = await browser.newPage();
    page.setDefaultTimeout(60_000);
    await openRun(page, d.url, runId);

    // While both calls run: each one's tool line, both nodes running, running bars.
    for (const call of CALLS) {
      await page.locator(".call-output.running .log-tool", {
        hasText: `→ Bash: echo ${call.marker}-ran`,
      }).waitFor();
      await page.locator(`.dag-node[data-state="running"][data-label="${call.label}"]`).waitFor();
    }
    await page.locator(".dag-group[data-kind=parallel]").waitFor();
    await page.locator(".tl-bar.state-running").nth(1).waitFor();
    assert.equal(await page.locator(".result").count(), 0, "the run has not ended yet");
    await saveScreenshot(page, "run-real-agent-live");

    // The model answers: both calls end, the run succeeds, the nodes show it.
    release();
    await page.locator(".result").waitFor();
    for (const call of CALLS) {
      await page.locator(`.dag-node[data-state="succeeded"][data-label="${call.label}"]`).waitFor();
    }
    assert.equal(await page.locator(".call-output.running").count(), 0);
    assert.equal(await page.locator(".tl-bar.state-running").count(), 0);
    const status = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
    assert.equal(status.body.state, "succeeded", JSON.stringify(status.body));
    assert.match(JSON.stringify(status.body.result), /task-alpha-ran/);
    await saveScreenshot(page, "run-real-agent-done");
    browser.assertNoErrors();
  },
  { skip: skipReason() },
);
