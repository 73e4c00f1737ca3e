/**
 * A run's title and description, as its request gave them, on the board page: the run list and
 * the run page show them as text, beside the saved workflow's name.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { tempDir } from "./helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

pageTest(
  "a run started by name shows its title and description on the run list and the run page",
  async () => {
    await using root = await tempDir("svc-root-");
    const project = `${root.path}/project/.claude/workflows`;
    await Deno.mkdir(project, { recursive: true });
    await Deno.writeTextFile(
      `${project}/validate-everything.js`,
      `export const meta = { name: "validate" };\nreturn await agent("check " + args.what);`,
    );
    await using d = await startDashboard({
      port: true,
      config: ConfigSchema.parse({ workspaces: { alice: [root.path] } }),
    });
    const started = await d.json("/api/workflow/run", {
      token: TOKENS.alice,
      body: {
        name: "validate",
        workdir: `${root.path}/project`,
        args: { what: "the release" },
        title: `Validate the release ${HOSTILE}`,
        description: `Before tagging 1.4:\nevery check, ${HOSTILE} included.`,
        fake_dispatch: true,
      },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId = String(started.body.run_id);
    await d.services.runs.wait(runId, { owner: "alice" });
    await using browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
    await page.goto(`${d.url}/#token=${TOKENS.alice}`);
    await page.goto(`${d.url}/#/runs`);
    const row = page.locator("tr", { hasText: runId });
    await row.waitFor();
    assert.equal(
      await row.getByRole("link", { name: /Validate the release/ }).innerText(),
      `Validate the release ${HOSTILE}`,
    );
    assert.equal(await row.locator(".run-script").innerText(), "validate");
    await saveScreenshot(page, "run-list-title");
    await row.getByRole("link", { name: /Validate the release/ }).click();
    await page.locator(".run-head h1", { hasText: "Validate the release" }).waitFor();
    assert.equal(await page.locator(".run-head .run-script").innerText(), "validate");
    assert.equal(
      await page.locator(".run-head .run-description").innerText(),
      `Before tagging 1.4:\nevery check, ${HOSTILE} included.`,
    );
    await page.locator(".result").waitFor();
    assert.equal(await page.locator("img").count(), 0, "the title and description are text");
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    await saveScreenshot(page, "run-title");
  },
);
