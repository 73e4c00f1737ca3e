import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
  >;
};

Deno.test("GET /api/openapi.json is a valid OpenAPI 3.1 document that describes exactly the routes the server answers", async () => {
  await using d = await startDashboard();
  const response = await d.request("/api/openapi.json", { token: TOKENS.alice });
  assert.equal(response.status, 200);
  const doc = await response.json() as Doc & { openapi: string };
  assert.equal(doc.openapi, "3.1.0");
  const result = await new Validator().validate(structuredClone(doc));
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  // The run events' `calls_replayed` data is named, since a stream has no JSON response.
  const components = (doc as { components?: { schemas?: Record<string, unknown> } }).components;
  assert.ok(components?.schemas?.CallsReplayedEvent, "the calls_replayed event is documented");

  const documented = new Set<string>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const method of Object.keys(methods)) documented.add(`${method.toUpperCase()} ${path}`);
  }
  const served = new Set(d.server.app.routes().map((r) => `${r.method} ${r.path}`));
  served.delete("GET /api/openapi.json");
  assert.deepEqual([...served].sort(), [...documented].sort());
  // The specification's table, and the routes the issue adds.
  for (
    const route of [
      "POST /api/dispatch",
      "GET /api/dispatch/{task_id}",
      "POST /api/dispatch/{task_id}/cancel",
      "GET /api/dispatch/{task_id}/events",
      "POST /api/workflow/run",
      "POST /api/workflow/legacy",
      "GET /api/workflow/{run_id}",
      "GET /api/workflow/{run_id}/events",
      "GET /api/workflow",
      "GET /api/workflow/{run_id}/journal",
      "GET /api/workflow/{run_id}/dag",
      "GET /api/workflow/{run_id}/calls/{seq}/events",
      "POST /api/workflow/{run_id}/cancel",
      "POST /api/workflow/{run_id}/resume",
      "GET /api/workflow/{run_id}/script",
      "GET /api/status",
      "GET /api/history",
      "GET /api/stats",
      "GET /api/providers",
      "GET /api/capabilities",
      "GET /api/costs",
      "GET /api/usage/summary",
      "GET /api/tasks",
      "GET /api/tasks/{task_id}",
      "POST /api/tasks/{task_id}/{action}",
      "GET /api/sessions",
      "GET /api/sessions/{session_id}",
      "POST /api/sessions",
      "GET /api/pulse",
      "GET /api/board/{issue_id}/runs",
      "GET /api/notifications",
      "POST /api/notifications/read",
      "GET /api/config",
      "POST /api/config/reload",
    ]
  ) {
    assert.ok(documented.has(route), `${route} is documented`);
  }
});

Deno.test("the answers of the routes match the response schemas of the OpenAPI document", async () => {
  // With latency the fake's calls have live output, which the call events route serves.
  await using d = await startDashboard({ fakeLatencyMs: 5 });
  const doc = d.server.app.openapi() as unknown as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...doc, $id: "https://svc.local/openapi.json" });
  const check = async (method: string, template: string, path: string, body?: unknown) => {
    const { status, body: answer } = await d.json(path, {
      token: TOKENS.alice,
      method,
      ...(body !== undefined ? { body } : {}),
    });
    const pointer = `#/paths/${
      template.replaceAll("~", "~0").replaceAll("/", "~1")
    }/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
    const validate = ajv.getSchema(`https://svc.local/openapi.json${pointer}`);
    assert.ok(validate, `${method} ${path}: status ${status} is documented`);
    assert.ok(validate(answer), `${method} ${path} ${status}: ${ajv.errorsText(validate.errors)}`);
    return answer;
  };
  const run = await check("POST", "/api/workflow/run", "/api/workflow/run", {
    script: `log("x"); return await agent("hi");`,
    fake_dispatch: true,
  });
  const runId = String(run.run_id);
  await d.services.runs.wait(runId, { owner: "alice" });
  const legacy = await check("POST", "/api/workflow/legacy", "/api/workflow/legacy", {
    chain: { version: 1, steps: [{ id: "a", prompt: "hi" }] },
    fake_dispatch: true,
  });
  await d.services.runs.wait(String(legacy.run_id), { owner: "alice" });
  const task = await check("POST", "/api/dispatch", "/api/dispatch", {
    prompt: "hi",
    fake_dispatch: true,
  });
  await d.services.tasks.wait(String(task.task_id), { owner: "alice" });
  const session = await check("POST", "/api/sessions", "/api/sessions", { name: "s1" });
  await check("GET", "/api/workflow", "/api/workflow");
  await check("GET", "/api/workflow/{run_id}", `/api/workflow/${runId}`);
  await check("GET", "/api/workflow/{run_id}/journal", `/api/workflow/${runId}/journal`);
  await check("GET", "/api/workflow/{run_id}/dag", `/api/workflow/${runId}/dag`);
  await check("GET", "/api/workflow/{run_id}/dag", "/api/workflow/run_01nope/dag");
  const output = await check(
    "GET",
    "/api/workflow/{run_id}/calls/{seq}/events",
    `/api/workflow/${runId}/calls/1/events`,
  );
  assert.ok((output.events as unknown[]).length > 0, "the call's output is served");
  await check("POST", "/api/workflow/{run_id}/cancel", `/api/workflow/${runId}/cancel`);
  await check("GET", "/api/workflow/{run_id}/script", `/api/workflow/${runId}/script`);
  const resumed = await check(
    "POST",
    "/api/workflow/{run_id}/resume",
    `/api/workflow/${runId}/resume`,
    {
      fake_dispatch: true,
    },
  );
  await d.services.runs.wait(String(resumed.run_id), { owner: "alice" });
  await check("POST", "/api/workflow/{run_id}/resume", "/api/workflow/run_01nope/resume", {});
  await check("GET", "/api/workflow/{run_id}", "/api/workflow/run_01nope");
  await check("GET", "/api/dispatch/{task_id}", `/api/dispatch/${task.task_id}`);
  await check("GET", "/api/tasks", "/api/tasks");
  await check("GET", "/api/tasks/{task_id}", `/api/tasks/${task.task_id}`);
  await check("POST", "/api/tasks/{task_id}/{action}", `/api/tasks/${task.task_id}/cancel`);
  await check("GET", "/api/sessions", "/api/sessions");
  await check("GET", "/api/sessions/{session_id}", `/api/sessions/${session.session_id}`);
  for (
    const path of [
      "/api/status",
      "/api/history",
      "/api/stats",
      "/api/providers",
      "/api/capabilities",
      "/api/costs",
      "/api/usage/summary",
      "/api/pulse",
    ]
  ) {
    await check("GET", path, path);
  }
  await check("POST", "/api/workflow/run", "/api/workflow/run", { script: 1 });
  const failed = await check("POST", "/api/workflow/run", "/api/workflow/run", {
    script: `throw new Error("boom");`,
    fake_dispatch: true,
  });
  await d.services.runs.wait(String(failed.run_id), { owner: "alice" });
  await check("GET", "/api/notifications", "/api/notifications");
  await check("POST", "/api/notifications/read", "/api/notifications/read", { all: true });
  await check("POST", "/api/notifications/read", "/api/notifications/read", { ids: ["x"] });
});
