/**
 * A card's priority and project do not look like its labels: a solid priority badge and an
 * outlined project chip, in headless Chromium. Screenshot: test-artifacts/page/board-card-meta.png.
 */
import assert from "node:assert/strict";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

pageTest(
  "a card shows its priority as a badge and its project as a chip, apart from its labels",
  async () => {
    await using d = await startDashboard({ port: true });
    const made = await d.json("/api/board/write", {
      token: TOKENS.alice,
      body: {
        action: "new",
        mode: "apply",
        title: "Fix the flaky test",
        priority: "P1",
        project: `svc ${HOSTILE}`,
        labels: ["ci", "bug"],
      },
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    await using browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.getByRole("link", { name: "Board" }).click();
    const card = page.locator(".card", { hasText: "Fix the flaky test" });
    await card.waitFor();
    // "priority" is for screen readers only; the badge shows the value.
    assert.equal(
      (await card.locator(".prio-badge").innerText()).replace(/\s+/g, " "),
      "priority P1",
    );
    assert.equal(await card.locator(".prio-badge .sr-only").innerText(), "priority");
    assert.equal(
      (await card.locator(".project-chip").innerText()).replace(/\s+/g, " "),
      `PROJECTsvc ${HOSTILE}`,
      "the project, as text, under its key",
    );
    assert.deepEqual(await card.locator(".tag.label").allInnerTexts(), ["ci", "bug"]);
    assert.equal(await card.locator(".tag", { hasText: "P1" }).count(), 0, "not a label");
    assert.equal(await card.locator(".tag", { hasText: "svc" }).count(), 0, "not a label");
    type Look = { background: string; border: string; radius: string };
    const style = async (selector: string): Promise<Look> =>
      await page.evaluate(
        `(() => { const s = getComputedStyle(document.querySelector(".card ${selector}")); ` +
          `return { background: s.backgroundColor, border: s.borderColor, radius: s.borderRadius }; })()`,
      ) as Look;
    const [label, prio, project] = await Promise.all([
      style(".tag.label"),
      style(".prio-badge"),
      style(".project-chip"),
    ]);
    assert.notEqual(prio.background, label.background, "the badge is filled");
    assert.notEqual(project.border, label.border, "the chip is outlined in another colour");
    assert.notEqual(project.radius, label.radius, "the chip is round");
    assert.equal(await page.locator(".cards img").count(), 0);
    const inside = await page.evaluate(
      `(() => { const c = document.querySelector(".column").getBoundingClientRect(); ` +
        `const p = document.querySelector(".card .project-chip").getBoundingClientRect(); ` +
        `return p.right <= c.right + 0.5; })()`,
    );
    assert.equal(inside, true, "a long project stays inside its column");
    await saveScreenshot(page, "board-card-meta");
    browser.assertNoErrors();
  },
);
