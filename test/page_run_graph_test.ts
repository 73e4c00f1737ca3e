/**
 * The run page's graph, timeline and event history in headless Chromium against a real
 * dashboard (the Deno guest, the fake provider): live while a run runs and after it ended, a
 * running call shown with its label under the phase it runs in, a resumed run's replayed
 * calls and where live execution began, and a phone-width layout that does not scroll sideways.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { startDashboard, type TestDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

/** Phases declared up front: while the first runs, the last one is already on the page. */
function script(last: string): string {
  return `export const meta = { name: "graph demo", phases: ["Fan out", "Refine", "Finish"] };
phase("Fan out");
const both = await parallel([
  () => agent("left", { label: "left" }),
  () => agent("right", { label: "right" }),
]);
phase("Refine");
const refined = await pipeline(["a", "b"], (x) => agent("draft " + x, { label: "draft-" + x }));
const sub = await workflow("sub");
phase("Finish");
return [both, refined, sub, await agent(${JSON.stringify(last)}, { label: "last" })];
`;
}

async function start(d: TestDashboard, body: Record<string, unknown>): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { fake_dispatch: true, ...body },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  return String(started.body.run_id);
}

/** Signs in with alice's token, then opens `hash` once the page holds the token. */
async function open(page: Page, d: TestDashboard, hash: string): Promise<void> {
  await page.goto(`${d.url}/#token=${TOKENS.alice}`);
  await page.locator(".who").waitFor();
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
}

async function noSidewaysScroll(page: Page): Promise<void> {
  const overflow = await page.evaluate(
    "document.documentElement.scrollWidth - document.documentElement.clientWidth",
  );
  assert.ok(Number(overflow) <= 0, `the page scrolls sideways by ${overflow} px`);
}

pageTest(
  "the run page draws the graph, the timeline and the event history live, a running call under its own phase",
  async () => {
    await using d = await startDashboard({ port: true, fakeLatencyMs: 1500 });
    await Deno.mkdir(`${d.services.home}/workflows`, { recursive: true });
    await Deno.writeTextFile(
      `${d.services.home}/workflows/sub.js`,
      `return [await agent("sub 1", { label: "sub-1" }), await agent("sub 2", { label: "sub-2" })];`,
    );
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    const runId = await start(d, { script: script("last") });
    await open(page, d, `#/runs/${runId}`);

    // While the first phase runs: its calls show with their labels and a spinner under it,
    // not under the last phase.
    const fanOut = page.locator('.phase[data-phase="Fan out"]');
    await fanOut.locator(".call.running", { hasText: "left" }).locator(".spinner").waitFor();
    await fanOut.locator(".call.running", { hasText: "right" }).waitFor();
    assert.equal(await page.locator('.phase[data-phase="Finish"] .spinner').count(), 0);
    assert.equal(await page.locator('.phase[data-phase="Finish"] .call').count(), 0);
    // The graph and the timeline show them running; the history has their start.
    await page.locator('.dag-node[data-state="running"][data-label="left"]').waitFor();
    await page.locator(".dag-group[data-kind=parallel]").waitFor();
    await page.locator(".tl-bar.state-running").first().waitFor();
    await page.locator(".hist-item[data-type=call_started]").first().waitFor();
    await saveScreenshot(page, "run-graph-live");

    // Later phases, live: the pipeline and the sub-workflow take their frames.
    await page.locator(".dag-group[data-kind=pipeline]").waitFor();
    await page.locator('.phase[data-phase="Refine"] .call.running').first().waitFor();
    await page.locator(".dag-group[data-kind=workflow]").waitFor({ timeout: 20_000 });

    // After the end: every call drawn, none running.
    await page.locator(".result").waitFor({ timeout: 30_000 });
    await page.locator('.dag-node[data-label="last"][data-state="succeeded"]').waitFor();
    assert.equal(await page.locator(".dag-node").count(), 7);
    assert.equal(await page.locator('.dag-node[data-state="running"]').count(), 0);
    assert.equal(await page.locator(".call.running").count(), 0);
    assert.equal(await page.locator(".tl-bar").count(), 7);
    // The history, filtered by type and by call.
    await page.locator(".history-filters").getByRole("button", {
      name: "call_started",
      exact: true,
    }).click();
    const started = page.locator(".hist-item");
    assert.equal(await started.count(), 7);
    assert.equal(await page.locator(".hist-item:not([data-type=call_started])").count(), 0);
    await page.locator(".history-filters").getByRole("button", { name: "all", exact: true })
      .click();
    await page.getByLabel("only the events of call").selectOption("1");
    const ofCall = await page.locator(".hist-item .text").allInnerTexts();
    assert.ok(ofCall.length >= 2, ofCall.join("\n"));
    for (const text of ofCall) assert.match(text, /call #1 /);
    await saveScreenshot(page, "run-graph-desktop");

    // A phone: nothing scrolls sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.locator(".dag-svg").waitFor();
    await noSidewaysScroll(page);
    await saveScreenshot(page, "run-graph-phone");
  },
);

pageTest(
  "a resumed run's graph shows its replayed calls and where live execution began",
  async () => {
    await using d = await startDashboard({ port: true });
    await Deno.mkdir(`${d.services.home}/workflows`, { recursive: true });
    await Deno.writeTextFile(`${d.services.home}/workflows/sub.js`, `return await agent("s");`);
    const first = await start(d, { script: script("last") });
    await d.services.runs.wait(first, { owner: "alice" });
    const second = await start(d, { script: script("last, changed"), resume_from: first });
    await d.services.runs.wait(second, { owner: "alice" });
    await using browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await open(page, d, `#/runs/${second}`);
    await page.locator('.dag-node[data-label="last"].live-start').waitFor().catch(async (e) => {
      const graph = await page.locator(".run-visuals").innerText().catch(() => "");
      const dag = await d.json(`/api/workflow/${second}/dag`, { token: TOKENS.alice });
      throw new Error(`${e}\npage: ${graph}\napi: ${JSON.stringify(dag.body).slice(0, 3000)}`);
    });
    assert.equal(await page.locator(".dag-node.state-replayed").count(), 5);
    assert.equal(await page.locator(".dag-node.live-start").count(), 1);
    assert.match(await page.locator(".live-from").innerText(), new RegExp(first));
    await noSidewaysScroll(page);
    await saveScreenshot(page, "run-graph-resumed-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
    await saveScreenshot(page, "run-graph-resumed");
    // The history has the replayed calls as batches (no event per call), found by call too.
    const replayed = page.locator(".hist-item[data-type=calls_replayed]");
    await replayed.first().waitFor();
    for (const text of await replayed.locator(".text").allInnerTexts()) {
      assert.match(
        text,
        new RegExp(`^(1 call #\\d+|\\d+ calls #\\d+–#\\d+) replayed from ${first}$`),
      );
    }
    assert.equal(await page.locator(".hist-item[data-type=call]").count(), 1, "the live one");
    await page.getByLabel("only the events of call").selectOption("1");
    const ofCall = await page.locator(".hist-item").evaluateAll((items) =>
      items.map((item) => item.getAttribute("data-type"))
    );
    assert.deepEqual(ofCall, ["calls_replayed"], "call #1's only event is its batch");
    await replayed.first().scrollIntoViewIfNeeded();
    await saveScreenshot(page, "run-history-replayed");

    // The costs view names the runs that spent today, and the hours.
    await page.evaluate(`location.hash = "#/costs"`);
    await page.locator(`.run-spend li[data-id="${first}"]`).waitFor();
    await page.locator(`.run-spend li[data-id="${second}"]`).waitFor();
    await page.locator(".hour-chart rect").first().waitFor();
    await saveScreenshot(page, "costs-by-run");
    await page.setViewportSize({ width: 390, height: 844 });
    await noSidewaysScroll(page);
  },
);
