/**
 * Runs on the board page in headless Chromium against a real dashboard with the fake provider:
 * starting a run and watching it live, cancelling and resuming, and following on across a
 * server restart without losing or repeating an event.
 */
import assert from "node:assert/strict";
import { serveDashboard } from "../src/http/mod.ts";
import { startDashboard, type TestDashboard, TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

/** Starts a fake-dispatch run of `script` as alice through the API; resolves to its id. */
async function startRun(d: TestDashboard, script: string): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script, fake_dispatch: true },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  return String(started.body.run_id);
}

const LIVE_SCRIPT = `export const meta = { name: "review sweep", phases: ["ask", "sum up"] };
phase("ask");
log(${JSON.stringify(`reviewing ${HOSTILE} now`)});
const reviews = await parallel(
  ["tests", "docs"].map((topic) => () => agent("Review " + topic, { label: topic })),
);
phase("sum up");
const summary = await agent("Sum up", { label: "summary" });
return { summary, markup: ${JSON.stringify(HOSTILE)}, reviews };
`;

pageTest(
  "a run started from the page shows its calls and narration as they come, then its result",
  async () => {
    await using d = await startDashboard({ port: true, fakeLatencyMs: 700 });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.getByRole("link", { name: "Start a run" }).click();
    await page.getByLabel("Script", { exact: true }).fill(LIVE_SCRIPT);
    await page.getByLabel("args (JSON, optional)").fill('{"depth": 2}');
    await page.getByLabel("Budget (tokens)").fill("100000");
    await page.getByLabel("Timeout (s)").fill("120");
    await page.getByRole("button", { name: "Start the run" }).click();
    await page.waitForURL(/#\/runs\/run_/);
    const runId = decodeURIComponent(page.url().split("/").at(-1)!);
    // While it runs: the narration and the running calls arrive before the end.
    await page.locator(".narr-log", { hasText: `reviewing ${HOSTILE} now` }).waitFor();
    await page.locator(".live-calls", { hasText: "2 running" }).waitFor();
    assert.equal(await page.locator(".run-head .badge").innerText(), "running");
    await saveScreenshot(page, "run-live");
    await page.locator(".call", { hasText: "tests" }).waitFor();
    await page.locator(".phase", { hasText: "sum up" }).locator(".call", { hasText: "summary" })
      .waitFor();
    await page.locator(".result").waitFor();
    assert.equal(await page.locator(".run-head .badge").innerText(), "succeeded");
    const result = await page.locator(".result .text-block").innerText();
    assert.deepEqual(JSON.parse(result), {
      summary: "fake response to: Sum up",
      markup: HOSTILE,
      reviews: ["fake response to: Review tests", "fake response to: Review docs"],
    });
    // The request the page made is the run the API has, with its args and budget.
    const status = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
    assert.equal((status.body.budget as { total: number }).total, 100000);
    assert.equal(status.body.timeout, 120);
    assert.equal(status.body.fake_dispatch, true);
    // The tier the run got, and what confined its guest, as the API says it.
    const sandbox = status.body.guest_sandbox as { kind: string; hardened: boolean };
    const tier = await page.locator(".run-head [data-isolation]").innerText();
    assert.equal(
      tier,
      `unsafe-local · ${sandbox.hardened ? sandbox.kind : "no OS sandbox"}`,
    );
    // A call opens to its detail, with the result as text.
    await page.locator(".call", { hasText: "tests" }).locator("summary").click();
    await page.getByLabel("result of call 1").waitFor();
    assert.equal(await page.locator(".narration img, .result img, .call img").count(), 0);
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    await saveScreenshot(page, "run");
    // The list shows it, with its calls.
    await page.getByRole("link", { name: "Runs", exact: true }).click();
    const row = page.locator("tr", { hasText: "review sweep" });
    await row.waitFor();
    assert.match(await row.innerText(), /succeeded[\s\S]*3/);
    await saveScreenshot(page, "runs");
    browser.assertNoErrors();
  },
);

pageTest(
  "a long run is cancelled from its page, then resumed: the finished call is replayed",
  async () => {
    await using d = await startDashboard({ port: true, fakeLatencyMs: 1500 });
    const runId = await startRun(
      d,
      `const a = await agent("first", { label: "first" });\nlog("first done");\n` +
        `const b = await agent("second", { label: "second" });\nreturn [a, b];`,
    );
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.evaluate(`location.hash = "#/runs/${runId}"`);
    await page.locator(".narr-log", { hasText: "first done" }).waitFor();
    await page.getByRole("button", { name: "Cancel run" }).click();
    await page.locator(".run-head .badge", { hasText: "cancelled" }).waitFor();
    await page.locator(".ending", { hasText: "cancelled" }).waitFor();
    // The state is said once, with who asked; and what started the run.
    assert.equal(
      (await page.locator(".ending").innerText()).trim(),
      "cancelled by alice",
    );
    assert.equal(
      await page.locator(".run-head .started-by").innerText(),
      "Started by the HTTP API",
    );
    assert.equal(
      (await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice })).body.state,
      "cancelled",
    );
    await saveScreenshot(page, "run-cancelled");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.waitForURL((url) => url.hash.startsWith("#/runs/run_") && !url.hash.endsWith(runId));
    await page.locator(".result").waitFor({ timeout: 20_000 });
    await page.locator(".call", { hasText: "first" }).locator(".badge", { hasText: "replayed" })
      .waitFor();
    await page.locator(".call", { hasText: "second" }).locator(".badge", { hasText: "live" })
      .waitFor();
    assert.match(await page.locator(".run-head").innerText(), new RegExp(`resumed from ${runId}`));
    assert.equal(
      await page.locator(".run-head .started-by").innerText(),
      `Started by resume of ${runId} via the HTTP API`,
    );
    await page.getByRole("link", { name: "Runs", exact: true }).click();
    await page.locator(".started-by", { hasText: `by resume of ${runId}` }).waitFor();
    await page.locator(".row-error", { hasText: "cancelled by alice" }).waitFor();
    assert.doesNotMatch(await page.locator(".row-error").first().innerText(), /cancelled: /);
    browser.assertNoErrors();
  },
);

pageTest(
  "after a server restart under an open page, it reconnects and continues from its last event",
  async () => {
    await using d = await startDashboard({ port: true, fakeLatencyMs: 250 });
    const lines = 14;
    const runId = await startRun(
      d,
      `for (let i = 1; i <= ${lines}; i++) { log("line " + i); await agent("step " + i); }` +
        `\nreturn "done";`,
    );
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.evaluate(`location.hash = "#/runs/${runId}"`);
    await page.locator(".narr-log", { hasText: "line 2" }).waitFor();
    // The server goes away; the run goes on in the services and its events reach the ledger.
    const port = Number(new URL(d.url).port);
    await d.server.close();
    await page.locator('.top [data-state="reconnecting"]').waitFor();
    await page.locator(".run-head .conn-reconnecting").waitFor();
    await saveScreenshot(page, "reconnecting");
    // Connection attempts against a closed port are the browser's console errors: expected here.
    const back = await serveDashboard(d.services, {
      hostname: "127.0.0.1",
      port,
      auth: TWO_OWNERS,
    });
    try {
      await page.locator(".result").waitFor({ timeout: 30_000 });
      await page.locator('.top [data-state="connected"]').waitFor();
      const narrated = await page.locator(".narr-log .text").allInnerTexts();
      assert.deepEqual(narrated, Array.from({ length: lines }, (_, i) => `line ${i + 1}`));
      await page.locator(".call").nth(lines - 1).waitFor();
      assert.equal(await page.locator(".call").count(), lines);
      for (const problem of browser.takeErrors()) {
        assert.match(problem.text, /ERR_CONNECTION_REFUSED|Failed to load resource/, problem.text);
      }
      // And the general stream continued too: a run started now shows up in the list.
      await page.getByRole("link", { name: "Runs", exact: true }).click();
      await d.json("/api/workflow/run", {
        token: TOKENS.alice,
        body: {
          script: `export const meta = { name: "after the restart" };\nreturn 1;`,
          fake_dispatch: true,
        },
      });
      await page.locator("tr", { hasText: "after the restart" }).waitFor();
      browser.assertNoErrors();
    } finally {
      await back.close();
    }
  },
);
