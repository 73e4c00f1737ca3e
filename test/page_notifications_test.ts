/**
 * The page's notifications in headless Chromium against a real dashboard: a failed run's
 * notification shows, the header's badge counts it live, marking it read clears it; once the
 * person allows them, a new one shows as the browser's own notification; a phone-width layout
 * does not scroll sideways.
 */
import assert from "node:assert/strict";
import { startDashboard, type TestDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

/** Polls an expression in the page (evaluated through the debugger: the page's CSP allows no eval). */
async function until(page: { evaluate(expr: string): Promise<unknown> }, expr: string) {
  for (let i = 0; i < 200; i++) {
    if (await page.evaluate(expr)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`the page never came to ${expr}`);
}

async function failRun(d: TestDashboard, message: string): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `throw new Error(${JSON.stringify(message)})`, fake_dispatch: true },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  await d.services.runs.wait(runId, { owner: "alice" });
  return runId;
}

pageTest(
  "a failed run's notification shows, the badge counts it live, marking read clears it",
  async () => {
    await using d = await startDashboard({ port: true });
    const first = await failRun(d, "first");
    // Bob's failure is never Alice's notification.
    const bob = await d.json("/api/workflow/run", {
      token: TOKENS.bob,
      body: { script: `throw new Error("bob")`, fake_dispatch: true },
    });
    await d.services.runs.wait(String(bob.body.run_id), { owner: "bob" });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    const origin = new URL(d.url).origin;
    await page.context().grantPermissions(["notifications"], { origin });
    // Records what the page shows as browser notifications, passing each on to the real one.
    await page.addInitScript(`{
      const Real = window.Notification;
      window.__shown = [];
      window.Notification = class extends Real {
        constructor(title, options) { super(title, options); window.__shown.push(options.body); }
      };
    }`);
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    const badge = page.locator(".notify-link .count");
    await badge.waitFor();
    assert.equal(await badge.innerText(), "1");
    // The pulse names the last failure, its run and its age apart.
    const failure = page.locator(".pulse-failure");
    await failure.waitFor();
    assert.match(await failure.innerText(), new RegExp(`${first} \\d+[smhd] ago`));
    await page.locator(".notify-link").click();
    const item = page.locator(`.notification.unread a[href="#/runs/${first}"]`);
    await item.waitFor();
    assert.match(await item.innerText(), new RegExp(`Run ${first} ended failed`));
    assert.equal(await page.locator(".notification").count(), 1, "only Alice's own");
    assert.equal(await page.getByText("Browser notifications on").count(), 1);
    // A second failure while the page is open: the badge and the list follow live, and the
    // browser shows it (permission was given).
    const second = await failRun(d, "second");
    await page.locator(`.notification.unread a[href="#/runs/${second}"]`).waitFor();
    await until(page, `document.querySelector(".notify-link .count")?.textContent === "2"`);
    await until(page, `window.__shown.length === 1`);
    assert.match(String(await page.evaluate(`window.__shown[0]`)), new RegExp(second));
    await saveScreenshot(page, "notifications");
    // Marking one read, then all: the badge goes.
    await page.locator(`.notification[data-id] button`, { hasText: "Mark read" }).first().click();
    await until(page, `document.querySelector(".notify-link .count")?.textContent === "1"`);
    await page.getByRole("button", { name: "Mark all read" }).click();
    await until(page, `document.querySelector(".notify-link .count") === null`);
    assert.equal(await page.locator(".notification.unread").count(), 0);
    assert.equal(await page.locator(".notification.read").count(), 2);
    await saveScreenshot(page, "notifications-read");
    browser.assertNoErrors();
  },
);

pageTest(
  "the permission button asks the browser; a phone-width list does not scroll sideways",
  async () => {
    await using d = await startDashboard({ port: true });
    await failRun(d, "x".repeat(400));
    await using browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
    await page.addInitScript(`{
    window.__asked = 0;
    const ask = Notification.requestPermission.bind(Notification);
    Notification.requestPermission = () => { window.__asked++; return ask(); };
  }`);
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.evaluate(`location.hash = "#/notifications"`);
    await page.locator(".notification").waitFor();
    // The page never asks on its own.
    assert.equal(await page.evaluate(`window.__asked`), 0);
    const button = page.getByRole("button", { name: "Show browser notifications" });
    if (await button.count() > 0) {
      await button.click();
      await until(page, `window.__asked === 1`);
    }
    const wide = await page.evaluate(
      `document.documentElement.scrollWidth - document.documentElement.clientWidth`,
    );
    assert.ok(Number(wide) <= 0, `the page scrolls sideways by ${wide}px`);
    await saveScreenshot(page, "notifications-phone");
    browser.assertNoErrors();
  },
);
