/**
 * The Providers view's configuration panel, in headless Chromium against a real dashboard: the
 * operator reloads an edited config.json with its button and sees the new provider; an invalid
 * file's error shows as text while the old configuration stays; an owner's page has no panel.
 */
import assert from "node:assert/strict";
import { serveDashboard } from "../src/http/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";
import { tempDir } from "./helpers.ts";
import { launchBrowser, pageTest, saveScreenshot } from "./page_helpers.ts";

const EXTRA_PROVIDER = {
  type: "openai",
  model: "m",
  base_url: "http://127.0.0.1:9/v1",
  api_key_env: "EXTRA_API_KEY",
};

pageTest(
  "the operator reloads config.json from the Providers view; a refused file's error shows as text; an owner sees no panel",
  async () => {
    await using home = await tempDir("svc-page-config-");
    const file = `${home.path}/config.json`;
    await Deno.writeTextFile(file, "{}");
    await using services = await openServices({ home: home.path });
    await using server = await serveDashboard(services, {
      hostname: "127.0.0.1",
      port: 0,
      auth: TWO_OWNERS,
    });
    await using browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${server.url}/#token=${TOKENS.shared}`);
    await page.evaluate(`location.hash = "#/providers"`);
    const panel = page.getByLabel("configuration panel");
    await panel.waitFor();
    assert.match(await panel.innerText(), new RegExp(file.replaceAll("/", "\\/")));

    await Deno.writeTextFile(file, JSON.stringify({ providers: { extra: EXTRA_PROVIDER } }));
    await panel.getByRole("button", { name: "Reload configuration" }).click();
    await panel.getByText("Reloaded: the file's providers").waitFor();
    await page.locator(".provider b", { hasText: "extra" }).waitFor();
    await saveScreenshot(page, "config-reloaded");

    // A key that is markup: refused, and shown as the text it is.
    const hostile = "<img src=x onerror=alert(1)>";
    await Deno.writeTextFile(
      file,
      JSON.stringify({ providers: { extra: EXTRA_PROVIDER }, [hostile]: 1 }),
    );
    await panel.getByRole("button", { name: "Reload configuration" }).click();
    const error = panel.getByTestId("config-error");
    await error.waitFor();
    const text = await error.innerText();
    assert.ok(text.includes(hostile), text);
    assert.equal(await panel.locator("img").count(), 0);
    assert.deepEqual(services.dispatcher.providers().sort(), ["extra", "fake"]);
    await saveScreenshot(page, "config-refused");

    // An owner's page: no panel, and nothing it asked for was refused.
    const owner = await browser.newPage();
    await owner.goto(`${server.url}/#token=${TOKENS.alice}`);
    await owner.evaluate(`location.hash = "#/providers"`);
    await owner.locator(".provider b", { hasText: "extra" }).waitFor();
    assert.equal(await owner.getByLabel("configuration panel").count(), 0);
    browser.assertNoErrors();
  },
);
