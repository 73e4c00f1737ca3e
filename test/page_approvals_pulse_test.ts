/**
 * Approvals where the run is, the header's pulse strip and a card's runs, in headless Chromium
 * against a real dashboard: a call waiting for approval is approved (and another denied) from
 * the run page with a reason, and the page then says who decided and why; a dispatch is decided
 * on its task page; a run started for a card links to it and the card lists it.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { ConfigSchema } from "../src/config/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const ASK = ConfigSchema.parse({ sandbox: { full: "ask" } });
const HOSTILE = `<img src=x onerror="window.__pwned=1">`;
type Dashboard = Awaited<ReturnType<typeof startDashboard>>;

const SCRIPT = `
const deployed = await agent("deploy the release", { sandbox: "full", label: ${
  JSON.stringify(`deploy ${HOSTILE}`)
} });
const after = await agent("tell the team", { label: "announce" });
return { deployed, after };
`;

async function startRun(d: Dashboard, cardId?: string): Promise<string> {
  const run = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: SCRIPT,
      fake_dispatch: true,
      sandbox_max: "full",
      ...(cardId ? { card_id: cardId } : {}),
    },
  });
  assert.equal(run.status, 202, JSON.stringify(run.body));
  return String(run.body.run_id);
}

async function ended(d: Dashboard, runId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 1000; i++) {
    const { body } = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
    if (!["queued", "running"].includes(String(body.state))) return body;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${runId} did not end`);
}

async function noSidewaysScroll(page: Page): Promise<void> {
  const overflow = Number(
    await page.evaluate(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    ),
  );
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the window`);
}

pageTest(
  "a call waiting for approval is approved from the run page, which then says who and why; the card lists the run",
  async () => {
    await using d = await startDashboard({ port: true, config: ASK });
    const made = await d.json("/api/board/write", {
      token: TOKENS.alice,
      body: { action: "new", mode: "apply", title: "Ship the release" },
    });
    const cardId = String((made.body.card as { issue_id: string }).issue_id);
    const runId = await startRun(d, cardId);
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    // The header's pulse strip counts the run and the call waiting for a person.
    await page.locator(".pulse .pulse-waiting.attention", { hasText: "1" }).waitFor();
    await page.locator(".pulse .stat", { hasText: "running" }).filter({ hasText: "1" }).waitFor();
    await page.locator(".pulse .pulse-providers", { hasText: "1/1" }).waitFor();
    // The run list marks the run.
    await page.locator("tr", { hasText: runId }).locator(".badge.attention", {
      hasText: "approval",
    }).waitFor();
    await saveScreenshot(page, "pulse-runs-waiting");

    await page.goto(`${d.url}/#/runs/${runId}`);
    const waiting = page.locator(".run-approval.approval-pending");
    await waiting.waitFor();
    assert.match(await waiting.innerText(), /deploy <img src=x/);
    await page.getByLabel("prompt").filter({ hasText: "deploy the release" }).waitFor();
    await page.locator(".card-link", { hasText: `card #${cardId}` }).waitFor();
    await saveScreenshot(page, "run-approval-waiting");
    // The calls panel shows the call that waits, not "No calls yet", and leads to its approval.
    const calls = page.locator("section.panel", {
      has: page.locator("h2", { hasText: "Calls by phase" }),
    });
    const row = calls.locator(".call.waiting[data-seq='1']");
    await row.waitFor();
    assert.match(await row.innerText(), /#1\s+deploy <img src=x.*waiting for approval/s);
    assert.equal(await calls.locator(".empty", { hasText: "No calls yet" }).count(), 0);
    assert.equal(await calls.locator("img").count(), 0);
    await row.getByRole("link", { name: "waiting for approval" }).click();
    assert.equal(
      await page.evaluate("!!document.activeElement?.closest('.run-approval.approval-pending')"),
      true,
      "the link leads to the approval",
    );
    await saveScreenshot(page, "run-waiting-call");
    const waitingPhone = await browser.newPage({ viewport: { width: 390, height: 800 } });
    await waitingPhone.goto(`${d.url}/#token=${TOKENS.alice}`);
    await waitingPhone.goto(`${d.url}/#/runs/${runId}`);
    await waitingPhone.locator(".call.waiting[data-seq='1'] .waiting-link").waitFor();
    await noSidewaysScroll(waitingPhone);
    await saveScreenshot(waitingPhone, "run-waiting-call-phone");
    await waitingPhone.close();
    await waiting.getByLabel("Reason (optional)").fill(`release day ${HOSTILE}`);
    await waiting.getByRole("button", { name: "Approve" }).click();
    const decided = page.locator(".run-approval.approval-approved .decision-approved");
    await decided.waitFor();
    assert.match(
      await decided.innerText(),
      /approved by alice at \d\d:\d\d:\d\d — .?release day <img/,
    );
    const run = await ended(d, runId);
    assert.equal(run.state, "succeeded", "the run went on after the approval");
    await page.locator(".run-head .badge", { hasText: "succeeded" }).waitFor();
    // Read afresh, the page still says who approved and why: from the run's own events.
    await page.reload();
    await page.locator(".decision-approved", { hasText: "by alice" }).filter({
      hasText: "release day",
    }).waitFor();
    await saveScreenshot(page, "run-approval-approved");

    // The run links to its card; the card lists the run and its history names it.
    await page.locator(".card-link").click();
    await page.waitForURL(new RegExp(`#/board/${cardId}$`));
    const runs = page.locator(".card-runs");
    await runs.locator("li", { hasText: runId }).locator(".badge", { hasText: "succeeded" })
      .waitFor();
    await page.locator(".card-log", { hasText: `run ${runId} started for this card` }).waitFor();
    await saveScreenshot(page, "card-runs");

    const phone = await browser.newPage({ viewport: { width: 390, height: 800 } });
    await phone.goto(`${d.url}/#token=${TOKENS.alice}`);
    await phone.goto(`${d.url}/#/runs/${runId}`);
    await phone.locator(".decision-approved").waitFor();
    await phone.locator(".pulse .pulse-waiting:not(.attention)", { hasText: "0" }).waitFor();
    await phone.locator(".pulse .stat", { hasText: "running" }).filter({ hasText: "0" }).waitFor();
    await noSidewaysScroll(phone);
    await saveScreenshot(phone, "run-approval-phone");
    await phone.goto(`${d.url}/#/board/${cardId}`);
    await phone.locator(".card-runs li", { hasText: runId }).waitFor();
    await noSidewaysScroll(phone);
    await saveScreenshot(phone, "card-runs-phone");
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    assert.equal(await phone.evaluate("window.__pwned"), undefined);
    browser.assertNoErrors();
  },
);

pageTest(
  "a call denied from the run page with a reason: the script gets null and the page says who and why; a dispatch is decided on its task page",
  async () => {
    await using d = await startDashboard({ port: true, config: ASK });
    const runId = await startRun(d);
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.goto(`${d.url}/#/runs/${runId}`);
    const waiting = page.locator(".run-approval.approval-pending");
    await waiting.waitFor();
    await waiting.getByLabel("Reason (optional)").fill("not on a Friday");
    await waiting.getByRole("button", { name: "Deny" }).click();
    await page.locator(".decision-denied", { hasText: "denied by alice" }).filter({
      hasText: "not on a Friday",
    }).waitFor();
    const run = await ended(d, runId);
    assert.equal(run.state, "succeeded");
    assert.equal((run.result as { deployed: unknown }).deployed, null, "the denied call is null");
    await page.locator(".run-head .badge", { hasText: "succeeded" }).waitFor();
    await saveScreenshot(page, "run-approval-denied");

    const task = await d.json("/api/dispatch", {
      token: TOKENS.alice,
      body: { prompt: "rotate the keys", sandbox: "full", fake_dispatch: true, label: "rotate" },
    });
    const taskId = String(task.body.task_id);
    await page.goto(`${d.url}/#/tasks`);
    await page.locator("tr", { hasText: "rotate" }).locator(".badge.attention").click();
    await page.waitForURL(new RegExp(`#/tasks/${taskId}$`));
    const pending = page.locator(".run-approval.approval-pending");
    await pending.getByLabel("Reason (optional)").fill("scheduled rotation");
    await pending.getByRole("button", { name: "Approve" }).click();
    await page.locator(".decision-approved", { hasText: "approved by alice" }).filter({
      hasText: "scheduled rotation",
    }).waitFor();
    await page.locator(".badge", { hasText: "succeeded" }).waitFor();
    await saveScreenshot(page, "task-approval-approved");
    // Bob sees none of it: his pulse is his own.
    const bob = await browser.newPage();
    await bob.goto(`${d.url}/#token=${TOKENS.bob}`);
    await bob.locator(".pulse .pulse-waiting", { hasText: "0" }).waitFor();
    await bob.locator(".pulse .stat", { hasText: "running" }).filter({ hasText: "0" }).waitFor();
    assert.equal(await bob.locator(".pulse-failure").count(), 0);
    browser.assertNoErrors();
  },
);
