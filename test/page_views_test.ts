/**
 * The board page's other views in headless Chromium against a real dashboard: tasks and a
 * dispatch, an approval decided by a person, sessions with their turns, providers, and the
 * cost chart.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { claudeProvider } from "../src/dispatch/mod.ts";
import { TESTED_VERSIONS } from "../src/dispatch/harness/mod.ts";
import { stub } from "./harness_helpers.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

pageTest(
  "a dispatch from the tasks view shows its result; an approval is granted from its view",
  async () => {
    await using d = await startDashboard({
      port: true,
      config: ConfigSchema.parse({ sandbox: { full: "ask" } }),
    });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.getByRole("link", { name: "Tasks", exact: true }).click();
    await page.getByLabel("Dispatch a prompt to an agent").fill(`Echo ${HOSTILE}`);
    await page.getByRole("button", { name: "Dispatch" }).click();
    await page.waitForURL(/#\/tasks\/task_/);
    await page.getByLabel("task result").waitFor();
    assert.equal(
      await page.getByLabel("task result").innerText(),
      `fake response to: Echo ${HOSTILE}`,
    );
    await page.locator(".badge", { hasText: "succeeded" }).waitFor();
    // A dispatch that asks for the full sandbox waits for a person.
    const waiting = await d.json("/api/dispatch", {
      token: TOKENS.alice,
      body: { prompt: `deploy ${HOSTILE}`, sandbox: "full", fake_dispatch: true, label: "deploy" },
    });
    const taskId = String(waiting.body.task_id);
    await page.locator(".summary .attention", { hasText: "1" }).waitFor();
    await page.getByRole("link", { name: "Approvals" }).click();
    const item = page.locator(".approval", { hasText: "deploy" });
    await item.waitFor();
    assert.equal(await page.locator(".approval img").count(), 0);
    await saveScreenshot(page, "approvals");
    await item.getByLabel("Reason (optional)").fill("release day");
    await item.getByRole("button", { name: "Approve" }).click();
    await page.getByText("Nothing is waiting for a person.").waitFor();
    const done = await d.json(`/api/dispatch/${taskId}`, { token: TOKENS.alice });
    assert.notEqual(done.body.state, "queued");
    for (let i = 0; i < 200; i++) {
      const task = await d.json(`/api/dispatch/${taskId}`, { token: TOKENS.alice });
      if (task.body.state === "succeeded") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await page.getByRole("link", { name: "Tasks", exact: true }).click();
    await page.locator("tr", { hasText: "deploy" }).locator(".badge", { hasText: "succeeded" })
      .waitFor();
    await saveScreenshot(page, "tasks");
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    browser.assertNoErrors();
  },
);

pageTest(
  "sessions show their turns; providers their availability; costs a chart by day and provider",
  async () => {
    await using d = await startDashboard({ port: true });
    await d.json("/api/sessions", {
      token: TOKENS.alice,
      body: { name: "pairing", provider: "fake" },
    });
    const turn = await d.json("/api/dispatch", {
      token: TOKENS.alice,
      body: { prompt: `first ${HOSTILE}`, session: "pairing" },
    });
    for (let i = 0; i < 200; i++) {
      const task = await d.json(`/api/dispatch/${turn.body.task_id}`, { token: TOKENS.alice });
      if (task.body.state === "succeeded") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByRole("link", { name: "pairing" }).click();
    const turns = page.locator(".turn");
    await turns.nth(1).waitFor();
    assert.deepEqual(await turns.locator(".text-block").allInnerTexts(), [
      `first ${HOSTILE}`,
      `fake response to: first ${HOSTILE}`,
    ]);
    await page.getByRole("link", { name: "Providers" }).click();
    const fake = page.locator(".provider", { hasText: "fake" });
    await fake.waitFor();
    assert.match(await fake.innerText(), /available/);
    await page.getByRole("link", { name: "Costs" }).click();
    const chart = page.getByRole("img", { name: /per day for the last 14 days, by provider/ });
    await chart.waitFor();
    await page.getByRole("button", { name: "Tokens" }).click();
    // Today's bar has one segment for the one provider that answered, and it has a height.
    const bars = chart.locator("rect.series");
    await bars.first().waitFor();
    assert.equal(await bars.count(), 1);
    assert.ok(Number(await bars.first().getAttribute("height")) > 0);
    const usage = (await d.json("/api/usage/summary", { token: TOKENS.alice })).body.usage as {
      input_tokens: number;
      output_tokens: number;
    };
    assert.match(
      await bars.first().locator("title").textContent() ?? "",
      new RegExp(`fake: ${usage.input_tokens + usage.output_tokens}$`),
    );
    await page.locator(".provider-bars li", { hasText: "fake" }).waitFor();
    // The totals name every kind of call docs/COUNTS.md defines.
    assert.match(
      await page.locator(".totals").innerText(),
      /over the newest 1 calls · \d+ tokens · 0 failed · 0 replayed · 0 refused/,
    );
    await saveScreenshot(page, "costs");
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    browser.assertNoErrors();
  },
);

pageTest(
  "the providers view shows each provider's capabilities: its tool's version against the tested one, credentials, sandbox levels",
  async () => {
    const config = ConfigSchema.parse({
      providers: { claude: { type: "claude", command: stub("claude") } },
    });
    await using d = await startDashboard({
      port: true,
      config,
      providers: [claudeProvider({ command: stub("claude") })],
    });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.getByRole("link", { name: "Providers" }).click();
    const claude = page.getByLabel("capabilities of claude");
    await claude.waitFor();
    const text = await claude.innerText();
    assert.match(text, new RegExp(`2\\.0\\.14, not the tested ${TESTED_VERSIONS.claude.version}`));
    assert.match(text, /credentials\s+missing\s+none of ANTHROPIC_API_KEY/);
    assert.deepEqual(await claude.locator(".tag").allInnerTexts(), ["read-only", "write", "full"]);
    const fake = page.getByLabel("capabilities of fake");
    assert.match(await fake.innerText(), /not needed/);
    await saveScreenshot(page, "providers");
    browser.assertNoErrors();
  },
);
