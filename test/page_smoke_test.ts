/**
 * The browser harness itself: the dashboard's page opens in headless Chromium, page errors are
 * caught, screenshots are saved, and a closed browser leaves no process or profile behind.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import {
  ARTIFACT_DIR,
  CHROMIUM,
  findExecutable,
  launchBrowser,
  pageTest,
  saveScreenshot,
  skippableTest,
} from "./page_helpers.ts";

pageTest(
  "the dashboard's page at / opens in Chromium with its title and heading, and a screenshot of it is saved",
  async () => {
    await using dashboard = await startDashboard({ port: true });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    const response = await page.goto(`${dashboard.url}/`);
    assert.equal(response?.status(), 200);
    assert.match(await page.title(), /svc/);
    // Without a token the page asks the API once, is refused, and asks for one.
    await page.getByLabel("Token").waitFor();
    assert.match(await page.locator("h1").first().innerText(), /svc/);
    assert.deepEqual(browser.takeErrors().map((e) => e.text), [
      `Failed to load resource: the server responded with a status of 401 (Unauthorized) (${dashboard.url}/api/status:0)`,
    ]);
    await Deno.remove(`${ARTIFACT_DIR}/smoke.png`).catch(() => {});
    const path = await saveScreenshot(page, "smoke");
    const png = await Deno.readFile(path);
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    browser.assertNoErrors();
  },
);

pageTest(
  "an uncaught exception and a console error on a page are collected as page errors",
  async () => {
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    const thrown = page.waitForEvent("pageerror");
    const logged = page.waitForEvent("console");
    await page.evaluate(
      `console.error("logged failure"); setTimeout(() => { throw new Error("thrown failure"); });`,
    );
    await Promise.all([thrown, logged]);
    const errors = browser.takeErrors();
    assert.deepEqual(errors.map((e) => e.kind).sort(), ["console", "pageerror"]);
    assert.ok(errors.some((e) => e.kind === "console" && e.text.includes("logged failure")));
    assert.ok(errors.some((e) => e.kind === "pageerror" && e.text.includes("thrown failure")));
    browser.assertNoErrors();
  },
);

pageTest(
  "markup that breaks the dashboard page's content security policy is reported as a page error",
  async () => {
    await using dashboard = await startDashboard({ port: true });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${dashboard.url}/#token=${TOKENS.alice}`);
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    const refused = page.waitForEvent(
      "console",
      (m) => m.text().includes("Content Security Policy"),
    );
    await page.evaluate(
      `document.body.insertAdjacentHTML("beforeend", '<img src="/favicon.svg" onload="document.title=1">')`,
    );
    await refused;
    const errors = browser.takeErrors();
    assert.ok(errors.length > 0);
    assert.ok(errors.every((e) => e.kind === "console" && e.url.startsWith(dashboard.url)));
    assert.ok(errors.some((e) => e.text.includes("Content Security Policy")));
    assert.match(await page.title(), /svc/);
  },
);

pageTest("a page error nobody took fails the test when its browser is closed", async () => {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const logged = page.waitForEvent("console");
    await page.evaluate(`console.error("left behind")`);
    await logged;
  } finally {
    await assert.rejects(
      async () => await browser[Symbol.asyncDispose](),
      /The page reported errors:\n.*left behind/,
    );
  }
});

/**
 * The browser's processes that have not exited (zombies wait only for their reaper): every
 * Chromium process names the profile in its arguments, and the crash handler its config dir.
 */
async function livingProcesses(marks: string[]): Promise<string[]> {
  const ps = await new Deno.Command("ps", { args: ["-eo", "pid=,stat=,args="] }).output();
  return new TextDecoder().decode(ps.stdout).split("\n").map((l) => l.trim())
    .filter((l) => !/^\d+\s+Z/.test(l) && marks.some((mark) => l.includes(mark)))
    .map((l) => l.slice(0, 160));
}

/** The profile directory the browser runs with, as its own chrome://version page shows it. */
async function profileDir(page: Page): Promise<string> {
  await page.goto("chrome://version");
  const profile = (await page.locator("#profile_path").innerText()).trim();
  return profile.replace(/\/Default$/, "");
}

const PS = await findExecutable("ps");
/** A page test that also needs ps(1) to list the browser's processes. */
function processTest(name: string, fn: () => Promise<void>): void {
  const noPs = PS === undefined ? "no ps(1) on PATH to list the browser's processes" : undefined;
  skippableTest(name, fn, { skip: CHROMIUM.skip ?? noPs });
}

processTest(
  "closing the browser ends every Chromium process it started and removes its profile",
  async () => {
    await using browser = await launchBrowser();
    const profile = await profileDir(await browser.newPage());
    const marks = [profile, browser.configDir];
    assert.ok((await Deno.stat(profile)).isDirectory);
    const before = await livingProcesses(marks);
    assert.ok(before.some((l) => l.startsWith(`${browser.pid} `)), before.join("\n"));
    assert.ok(before.some((l) => l.includes("chrome_crashpad_handler")), before.join("\n"));
    await browser[Symbol.asyncDispose]();
    assert.deepEqual(await livingProcesses(marks), []);
    await assert.rejects(Deno.stat(profile), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(browser.configDir), Deno.errors.NotFound);
  },
);

processTest(
  "a browser that hangs while closing is killed with its whole process group",
  async () => {
    await using browser = await launchBrowser({ closeBoundMs: 500 });
    const profile = await profileDir(await browser.newPage());
    // A stopped browser never answers the close command, as a wedged one would not.
    Deno.kill(browser.pid, "SIGSTOP");
    await browser[Symbol.asyncDispose]();
    assert.deepEqual(await livingProcesses([profile, browser.configDir]), []);
    await assert.rejects(Deno.stat(profile), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(browser.configDir), Deno.errors.NotFound);
  },
);

pageTest(
  "an address changed while the page is still starting is the view it shows",
  async () => {
    await using dashboard = await startDashboard({ port: true });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    // The moment the shell's navigation is drawn, and before the page listens for address
    // changes, the address moves to the costs view, as a quick click on a link would.
    await page.addInitScript(`{
      const watch = new MutationObserver(() => {
        if (document.querySelector("nav[aria-label=views]") === null) return;
        watch.disconnect();
        location.hash = "#/costs";
      });
      watch.observe(document, { childList: true, subtree: true });
    }`);
    await page.goto(`${dashboard.url}/#token=${TOKENS.alice}`);
    await page.locator("nav a[aria-current=page]", { hasText: "Costs" }).waitFor();
    assert.equal(await page.evaluate("location.hash"), "#/costs");
    browser.assertNoErrors();
  },
);
