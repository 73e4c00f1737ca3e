import assert from "node:assert/strict";
import { startDashboard } from "./dashboard_helpers.ts";
import { fixture, runCommand, tempDir } from "./helpers.ts";

/** The protocol's conformance kit, pinned: its scenarios change between versions. */
const CONFORMANCE = "npm:@modelcontextprotocol/conformance@0.1.16";

Deno.test("the /mcp endpoint passes every scenario of the MCP conformance kit that needs no fixture tools", async () => {
  // The kit's DNS-rebinding scenario is about a local server without authentication, so the
  // dashboard runs with authentication off here; the rest do not depend on it.
  await using d = await startDashboard({
    port: true,
    auth: { required: false, requireOwner: false, tokens: [], allowedOrigins: [] },
  });
  await using scratch = await tempDir("svc-conformance-");
  const result = await runCommand(Deno.execPath(), [
    "run",
    "-A",
    "--no-config",
    CONFORMANCE,
    "server",
    "--url",
    `${d.url}/mcp`,
    "--expected-failures",
    fixture("mcp/conformance_expected_failures.yml"),
  ], { cwd: scratch.path, env: { NO_COLOR: "1" } });
  const summary = result.stdout.slice(result.stdout.indexOf("=== SUMMARY ==="));
  assert.equal(result.code, 0, `${summary}\n${result.stderr.slice(-2000)}`);
  for (
    const scenario of [
      "server-initialize",
      "logging-set-level",
      "ping",
      "tools-list",
      "server-sse-multiple-streams",
      "dns-rebinding-protection",
    ]
  ) {
    assert.match(summary, new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`), scenario);
  }
  assert.match(summary, /Baseline check passed/);
});
