/**
 * A running call's live output on the run page in headless Chromium: it appears under the call
 * while the call runs (tool uses, the written file, the text), as text never markup, bounded in
 * the DOM, and gives way to the journaled call once it ends, whose row then offers the recorded
 * output on demand. Screenshots: `run-call-output`, `run-call-recorded-output` (and `-phone`).
 */
import assert from "node:assert/strict";
import type { Locator, Page } from "playwright-core";
import type { DispatchRequest, DispatchResult, Provider } from "../src/dispatch/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

/**
 * A provider that works like a coding agent for the page to watch: 250 lines of text, a
 * tool use, markup in its text, a written file; then one more line, and it answers only once
 * `release` is called.
 */
function workingProvider(): Provider & { release(): void; more(): void } {
  let release = () => {};
  let more = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const second = new Promise<void>((resolve) => (more = resolve));
  return {
    name: "worker",
    kind: "api",
    release: () => release(),
    more: () => more(),
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      const say = request.onProgress!;
      // A closing server aborts the call: the test must not hang on a failure.
      const stopped = new Promise<never>((_, reject) =>
        request.signal.addEventListener("abort", () => reject(request.signal.reason))
      );
      for (let i = 1; i <= 250; i++) say({ kind: "text", text: `log line ${i}\n` });
      say({ kind: "tool", name: "Bash", target: "ls -la src" });
      say({ kind: "text", text: `markup stays text: ${HOSTILE}\n` });
      say({ kind: "file", path: "src/notes.md", change: "write" });
      await Promise.race([second, stopped]);
      say({ kind: "text", text: "a later line\n" });
      await Promise.race([gate, stopped]);
      return {
        output: "worked",
        usage: { input_tokens: 10, output_tokens: 10 },
        cost_usd: 0,
        provider: "worker",
        model: "worker",
      };
    },
  };
}

pageTest("a running call's output appears live under the call, bounded and as text", async () => {
  const worker = workingProvider();
  await using d = await startDashboard({ port: true, providers: [worker] });
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `phase("work"); return await agent("do it", { provider: "worker" });` },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  await using browser = await launchBrowser();
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${d.url}/#token=${TOKENS.alice}`);
  await page.evaluate(`location.hash = "#/runs/${runId}"`);

  const output = page.locator(".call-output.running[data-call='1']");
  await output.locator(".log-tool", { hasText: "→ Bash: ls -la src" }).waitFor();
  await output.locator(".log-file", { hasText: "✎ src/notes.md (write)" }).waitFor();
  // Bounded: over 250 lines arrived, 200 are kept, the rest counted.
  assert.ok(await output.locator(".call-log > span").count() <= 201);
  await output.locator(".call-output-head", { hasText: /\d+ earlier lines not shown/ }).waitFor();
  assert.equal(await output.locator(".log-text", { hasText: /^log line 1$/ }).count(), 0);
  // Live: a line the call prints later shows up, and the log follows it to the end.
  worker.more();
  await output.locator(".log-text", { hasText: "a later line" }).waitFor();
  await output.locator(".log-text", { hasText: `markup stays text: ${HOSTILE}` }).waitFor();
  const scrolled = await output.locator(".call-log").evaluate((el) =>
    el.scrollHeight - el.scrollTop - el.clientHeight
  );
  assert.ok(scrolled < 24, `the log is scrolled to its end (${scrolled} px left)`);
  assert.equal(await page.locator(".call-output img").count(), 0);
  assert.equal(await page.evaluate("window.__pwned"), undefined);
  await saveScreenshot(page, "run-call-output");

  // The call ends: it is journaled and its live log gives way to the call's row.
  worker.release();
  await page.locator(".result").waitFor();
  await page.locator(".call", { hasText: "worker" }).first().waitFor();
  assert.equal(await page.locator(".call-output.running").count(), 0);

  // The ended call's row offers its recorded output: every batch read, the last 200 lines shown.
  const recorded = await openRecorded(page);
  assert.equal(await recorded.locator(".call-log > span").count(), 200);
  await recorded.locator(".call-output-head", { hasText: "54 earlier lines not shown" }).waitFor();
  await recorded.locator(".log-text", { hasText: /^log line 55$/ }).waitFor();
  assert.equal(await recorded.locator(".log-text", { hasText: /^log line 54$/ }).count(), 0);
  await recorded.locator(".log-tool", { hasText: "→ Bash: ls -la src" }).waitFor();
  await recorded.locator(".log-text", { hasText: `markup stays text: ${HOSTILE}` }).waitFor();
  await recorded.locator(".log-text", { hasText: "a later line" }).waitFor();
  assert.equal(await page.locator(".call-output img").count(), 0);
  await saveScreenshot(page, "run-call-recorded-output");
  await page.getByRole("button", { name: "hide output" }).click();
  assert.equal(await page.locator(".recorded-output .call-output").count(), 0);

  const phone = await browser.newPage({ viewport: { width: 390, height: 800 } });
  await phone.goto(`${d.url}/#token=${TOKENS.alice}`);
  await phone.goto(`${d.url}/#/runs/${runId}`);
  await (await openRecorded(phone)).locator(".log-text", { hasText: "a later line" }).waitFor();
  const overflow = Number(
    await phone.evaluate(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    ),
  );
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the window`);
  await saveScreenshot(phone, "run-call-recorded-output-phone");
  assert.equal(await page.evaluate("window.__pwned"), undefined);
  assert.equal(await phone.evaluate("window.__pwned"), undefined);
  browser.assertNoErrors();
});

/** Opens call 1's journaled row and its "output" toggle; the recorded log it shows. */
async function openRecorded(page: Page): Promise<Locator> {
  const row = page.locator("li.call:has(details)", { hasText: "worker" }).first();
  await row.locator("summary").click();
  await row.getByRole("button", { name: "output", exact: true }).click();
  const recorded = row.locator(".recorded-output .call-output[data-call='1']:not(.running)");
  await recorded.waitFor();
  return recorded;
}
