/**
 * The http group (`bench_http.ts`): the dashboard's requests per second, its first events over
 * SSE and one MCP tool call, each against its baseline.
 * @module
 */
import { measureHttp } from "../bench_http.ts";
import { summarize } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** The http group, measured once: the dashboard against a bare server. */
export async function reportHttp(report: Report, context: GroupContext): Promise<void> {
  // The dashboard, once: each figure already holds several rounds.
  if (context.only.has("http")) {
    const http = await measureHttp(context.root);
    report.baseline(
      "bare_serve_rps",
      "baseline: bare Deno.serve hello-world",
      summarize(http.bareRps),
      "req/s",
    );
    report.figure(
      "status_rps",
      "authenticated GET /api/status, dashboard process",
      summarize(http.statusRps),
      "req/s",
      "bare_serve_rps",
    );
    report.figure(
      "run_read_rps",
      "authenticated GET /api/workflow/{run_id}, finished run",
      summarize(http.runReadRps),
      "req/s",
      "bare_serve_rps",
      ">= 0.7x",
    );
    // Each round loads the three servers one after the other: on a shared machine the ratio
    // within a round is steadier than the ratio of the medians.
    report.part(
      "run_read_round_ratio",
      "  its ratio to the bare server within a round",
      summarize(http.runReadRps.map((rps, i) => rps / http.bareRps[i]!)),
      "x",
    );
    report.part(
      "status_round_ratio",
      "  /api/status's ratio to the bare server within a round",
      summarize(http.statusRps.map((rps, i) => rps / http.bareRps[i]!)),
      "x",
    );
    if (!report.figures["first_call_in_process_ms"]) {
      report.baseline(
        "first_call_in_process_ms",
        "baseline: first agent() call, in process",
        report.pick("inProcessFirstCallMs"),
        "ms",
      );
    }
    report.figure(
      "http_first_event_ms",
      "POST /api/workflow/run -> first SSE event",
      summarize(http.firstEventMs),
      "ms",
      "first_call_in_process_ms",
    );
    report.figure(
      "http_first_call_ms",
      "POST /api/workflow/run -> first call event over SSE",
      summarize(http.firstCallMs),
      "ms",
      "first_call_in_process_ms",
    );
    report.baseline(
      "rest_status_ms",
      "baseline: GET /api/workflow/{run_id}",
      summarize(http.restStatusMs),
      "ms",
    );
    report.figure(
      "mcp_status_session_ms",
      "svc_task_status over /mcp, 2025-era session",
      summarize(http.mcpSessionMs),
      "ms",
      "rest_status_ms",
    );
    report.figure(
      "mcp_status_stateless_ms",
      "svc_task_status over /mcp, stateless 2026-07-28",
      summarize(http.mcpStatelessMs),
      "ms",
      "rest_status_ms",
    );
  }
}
