/**
 * The board page in headless Chromium against a real dashboard: signing in, the board's dry
 * run then apply, and hostile markup shown as text. Screenshots go to test-artifacts/page/.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

/** Markup that would run script if it ever became HTML. */
const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`;

async function pwned(page: Page): Promise<unknown> {
  return await page.evaluate("window.__pwned");
}

pageTest(
  "the page asks for a token, says so when one is wrong, and keeps the right one for the tab",
  async () => {
    await using d = await startDashboard({ port: true });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/`);
    await page.getByLabel("Token").fill("wrong-token-0123456789abcdef");
    await page.getByRole("button", { name: "Open the dashboard" }).click();
    await page.getByText("That token was not accepted").waitFor();
    // The failed status request is the browser's own console error for a 401: expected here.
    browser.takeErrors();
    await saveScreenshot(page, "token");
    await page.getByLabel("Token").fill(TOKENS.alice);
    await page.getByRole("button", { name: "Open the dashboard" }).click();
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    await page.locator('[data-state="connected"]').waitFor();
    assert.match(await page.locator(".who").innerText(), /alice/);
    // A reload stays signed in: the token is in this tab's session storage, not in the URL.
    await page.reload();
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    assert.doesNotMatch(page.url(), /token/);
    // The start-up URL's fragment signs a new tab in, and leaves the address bar.
    const other = await browser.newPage();
    await other.goto(`${d.url}/#token=${TOKENS.bob}`);
    await other.getByRole("heading", { name: "Runs" }).waitFor();
    assert.match(await other.locator(".who").innerText(), /bob/);
    assert.doesNotMatch(other.url(), /token/);
  },
);

pageTest(
  "a card is previewed in a dry run, then applied, then taken; its markup stays text",
  async () => {
    await using d = await startDashboard({ port: true });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.getByRole("link", { name: "Board" }).click();
    await page.getByRole("button", { name: "New card" }).click();
    await page.getByLabel("Title").fill(`Fix ${HOSTILE} flaky test`);
    await page.getByLabel("Project").fill("svc");
    await page.getByLabel("Labels (comma-separated)").fill("ci, bug");
    await page.getByRole("button", { name: "Preview (dry run)" }).click();
    await page.getByText("Nothing was written").waitFor();
    const dry = await d.json("/api/board", { token: TOKENS.alice });
    assert.deepEqual(dry.body.cards, [], "a dry run writes nothing");
    await page.getByRole("button", { name: "Apply" }).click();
    const card = page.locator(".column", { hasText: "new" }).locator(".card").first();
    await card.waitFor();
    assert.equal(await card.locator(".card-title").innerText(), `Fix ${HOSTILE} flaky test`);
    assert.equal(await page.locator(".cards img, .cards script").count(), 0);
    const applied = await d.json("/api/board", { token: TOKENS.alice });
    assert.equal((applied.body.cards as unknown[]).length, 1);
    // Take it: again a preview first, then apply.
    await page.getByLabel("Action").selectOption("take");
    await page.getByLabel("Message").fill(`on it ${HOSTILE}`);
    await page.getByRole("button", { name: "Preview (dry run)" }).click();
    await page.getByText("Nothing was written").waitFor();
    await page.getByRole("button", { name: "Apply" }).click();
    await page.locator(".column", { hasText: "taken" }).locator(".card").first().waitFor();
    await page.locator(".card-log", { hasText: `on it ${HOSTILE}` }).waitFor();
    assert.equal(await page.locator(".card-log img, .card-log script").count(), 0);
    // A card written elsewhere arrives live.
    await d.json("/api/board/write", {
      token: TOKENS.alice,
      body: { action: "new", mode: "apply", title: "Written by curl" },
    });
    await page.getByText("Written by curl").waitFor();
    await saveScreenshot(page, "board");
    assert.equal(await pwned(page), undefined);
    browser.assertNoErrors();
  },
);

pageTest("the page is readable on a narrow window and in dark mode", async () => {
  await using d = await startDashboard({ port: true });
  await d.json("/api/board/write", {
    token: TOKENS.alice,
    body: { action: "new", mode: "apply", title: "A card on a phone" },
  });
  await using browser = await launchBrowser();
  const page = await browser.newPage({
    viewport: { width: 390, height: 800 },
    colorScheme: "dark",
  });
  await page.goto(`${d.url}/#token=${TOKENS.alice}`);
  await page.getByRole("link", { name: "Board" }).click();
  await page.getByText("A card on a phone").waitFor();
  // Nothing wider than the window: no sideways scrolling.
  const overflow = Number(
    await page.evaluate(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    ),
  );
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the window`);
  const background = await page.evaluate("getComputedStyle(document.body).backgroundColor");
  assert.equal(background, "rgb(18, 21, 27)", "dark by the system setting");
  // Every view is reachable by keyboard: from a fresh load, the second stop is the first view's
  // link (after the brand), and Enter follows it.
  await page.reload();
  await page.getByText("A card on a phone").waitFor();
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate("document.activeElement.textContent"), "Runs");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Runs" }).waitFor();
  await saveScreenshot(page, "narrow-dark");
  browser.assertNoErrors();
});
