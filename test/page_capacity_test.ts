/**
 * The page's summary bar shows admission control's caps and how full they are (docs/SECURITY.md,
 * "Capacity"), in headless Chromium against a real dashboard with the fake provider.
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../src/config/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

pageTest(
  "the page shows the host's and the caller's caps and how full they are, a full one marked",
  async () => {
    const config = defaultConfig();
    await using d = await startDashboard({
      port: true,
      fakeLatencyMs: 60_000,
      config: { ...config, admission: { ...config.admission, owner_live_runs: 1 } },
    });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const started = await d.json("/api/workflow/run", {
        token: TOKENS.alice,
        body: { script: `await agent("wait");` },
      });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      ids.push(String(started.body.run_id));
    }
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    const capacity = page.getByLabel("capacity");
    await capacity.waitFor();
    // The page's own event stream may open before or after it reads the status.
    const text = (await capacity.innerText()).replace(/\s+/g, " ").trim();
    assert.match(
      text,
      /host guests 1\/32 queue 1\/200 · yours: runs 1\/1 queued 1\/20 tasks 0\/8 streams [01]\/16$/,
    );
    assert.equal(await page.locator(".capacity .gauge.full").count(), 1, "the full cap stands out");
    await saveScreenshot(page, "capacity");
    // The queued run's own page says where it stands.
    await page.evaluate(`location.hash = "#/runs/${ids[1]}"`);
    await page.getByText("place 1 in the queue").waitFor();
    await saveScreenshot(page, "run-queued");
    browser.assertNoErrors();
  },
);
