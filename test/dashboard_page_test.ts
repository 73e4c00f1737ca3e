/**
 * The board page's files as the dashboard serves them (in process, real files of `page/`):
 * headers, caching, and that a request path never reaches the file system.
 */
import assert from "node:assert/strict";
import { PAGE_CSP } from "../src/http/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { readEvents } from "./dashboard_helpers.ts";

Deno.test("/ serves the board page with a CSP that forbids inline scripts and other origins", async () => {
  await using d = await startDashboard();
  const response = await d.request("/");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
  const csp = response.headers.get("content-security-policy") ?? "";
  assert.equal(csp, PAGE_CSP);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*|https?:/);
  assert.equal(response.headers.get("x-content-type-options"), "nosniff");
  assert.equal(response.headers.get("x-frame-options"), "DENY");
  const html = await response.text();
  assert.match(html, /<script type="module" src="\/app.js"><\/script>/);
  assert.doesNotMatch(html, /<script>|<script type="module">|style=/, "nothing inline");
});

Deno.test("the page's modules and the vendored library are served as JavaScript, revalidated by ETag", async () => {
  await using d = await startDashboard();
  for (const path of ["/app.js", "/lib/sse.js", "/views/run.js", "/vendor/preact.js"]) {
    const response = await d.request(path);
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.equal(response.headers.get("cache-control"), "no-cache");
    const etag = response.headers.get("etag")!;
    await response.body?.cancel();
    const again = await d.request(path, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304, path);
  }
  const css = await d.request("/app.css");
  assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
  await css.body?.cancel();
});

Deno.test("a path that is not one of the page's files is 404, whatever it tries", async () => {
  await using d = await startDashboard();
  for (
    const path of [
      "/nope.js",
      "/../deno.json",
      "/%2e%2e/deno.json",
      "/..%2fdeno.json",
      "/vendor/../../deno.json",
      "/index.html",
      "/lib",
      "/page/app.js",
    ]
  ) {
    const response = await d.request(path);
    assert.equal(response.status, 404, path);
    const text = await response.text();
    assert.doesNotMatch(text, /"imports"|nodeModulesDir/, path);
  }
  // The API keeps its own 404, in its error shape.
  const api = await d.json("/api/nope", { token: TOKENS.alice });
  assert.equal(api.status, 404);
  assert.equal((api.body.error as { code: string }).code, "not_found");
});

Deno.test("GET /api/events?from=now skips the history: a ready event with the position, then only new changes", async () => {
  await using d = await startDashboard();
  await d.json("/api/board/write", {
    token: TOKENS.alice,
    body: { action: "new", mode: "apply", title: "old card" },
  });
  const before = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return 1;`, fake_dispatch: true },
  });
  await d.services.runs.wait(before.body.run_id as string, { owner: "alice" });
  const stream = await d.request("/api/events?from=now", { token: TOKENS.alice });
  const reading = readEvents(stream, {
    until: (_e, all) => all.some((e) => e.event === "card"),
  });
  await d.json("/api/board/write", {
    token: TOKENS.alice,
    body: { action: "new", mode: "apply", title: "new card" },
  });
  const events = (await reading).filter((e) => e.event !== undefined);
  assert.equal(events[0]?.event, "ready");
  // Three run states and one card were there before: the ready id names those positions.
  assert.equal(events[0]?.id, "2.0");
  assert.deepEqual(events.slice(1).map((e) => e.event), ["card"]);
  assert.equal((events[1]?.data as { issue_id: string }).issue_id, "2");
  assert.equal(events[1]?.id, "2.1");
  // Last-Event-ID wins over from=now: the card comes again after the ready position.
  const again = await readEvents(
    await d.request("/api/events?from=now", {
      token: TOKENS.alice,
      headers: { "last-event-id": "2.0" },
    }),
    { until: (_e, all) => all.some((e) => e.event === "card") },
  );
  assert.deepEqual(
    again.filter((e) => e.event !== undefined).map((e) => [e.event, e.id]),
    [["card", "2.1"]],
  );
});

Deno.test("the usage summary splits each day by provider, for the page's cost chart", async () => {
  await using d = await startDashboard();
  const run = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return [await agent("a"), await agent("bb")];`, fake_dispatch: true },
  });
  await d.services.runs.wait(run.body.run_id as string, { owner: "alice" });
  const summary = await d.json("/api/usage/summary", { token: TOKENS.alice });
  const days = summary.body.by_day as Array<
    { day: string; calls: number; usage: unknown; providers: Array<Record<string, unknown>> }
  >;
  assert.equal(days.length, 1);
  assert.match(days[0]!.day, /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(days[0]!.calls, 2);
  assert.deepEqual(days[0]!.providers.map((p) => [p.provider, p.calls]), [["fake", 2]]);
  const usage = summary.body.usage as { input_tokens: number; output_tokens: number };
  assert.deepEqual(days[0]!.usage, usage);
  assert.equal(
    (days[0]!.providers[0]!.input_tokens as number) +
      (days[0]!.providers[0]!.output_tokens as number),
    usage.input_tokens + usage.output_tokens,
  );
});
