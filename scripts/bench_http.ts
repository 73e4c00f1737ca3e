/**
 * The dashboard's share of `deno task bench`: requests per second of an authenticated
 * `GET /api/status` and of an authenticated `GET /api/workflow/{run_id}` of a finished run
 * beside a bare `Deno.serve` hello-world measured in the same run (each
 * server in its own process, the load from the benchmark's process), and the time from
 * `POST /api/workflow/run` to the run's first server-sent event and to its first journaled
 * call arriving over SSE. And the tool protocol's cost: one `svc_task_status` call over `/mcp` (the
 * SDK's own client, in a 2025-era session and in the stateless 2026-07-28 era) beside a
 * `GET /api/workflow/{run_id}` of the same run.
 * @module
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { isTerminal } from "../src/engine/mod.ts";
import { BENCH_TOKEN } from "./bench_http_server.ts";

/** Requests of one load round. */
const LOAD_REQUESTS = 2000;
/** Requests in flight at once. */
const LOAD_CONCURRENCY = 16;
/** Rounds per server (alternating), after one warm-up round each. */
const LOAD_ROUNDS = 5;
/** Runs started over HTTP for the start-to-event figures (after one warm-up). */
const START_RUNS = 10;
/** Sequential status reads per way of asking (after as many warm-up reads). */
const STATUS_READS = 200;

/** What the HTTP benchmark measured: medians. */
export interface HttpFigures {
  /** Requests per second of the bare hello-world. */
  bareRps: number[];
  /** Requests per second of an authenticated `GET /api/status`. */
  statusRps: number[];
  /** Requests per second of an authenticated `GET /api/workflow/{run_id}` of a finished run. */
  runReadRps: number[];
  /** `POST /api/workflow/run` to the first SSE event, ms. */
  firstEventMs: number[];
  /** `POST /api/workflow/run` to the first `call` event over SSE, ms. */
  firstCallMs: number[];
  /** One `GET /api/workflow/{run_id}`, ms. */
  restStatusMs: number[];
  /** One `svc_task_status` tool call over `/mcp`, 2025-era session, ms. */
  mcpSessionMs: number[];
  /** One `svc_task_status` tool call over `/mcp`, stateless 2026-07-28, ms. */
  mcpStatelessMs: number[];
}

/** `STATUS_READS` timings of `read`, after as many untimed ones. */
async function timeReads(read: () => Promise<void>): Promise<number[]> {
  for (let i = 0; i < STATUS_READS; i++) await read();
  const samples: number[] = [];
  for (let i = 0; i < STATUS_READS; i++) {
    const started = performance.now();
    await read();
    samples.push(performance.now() - started);
  }
  return samples;
}

/** Timings of `svc_task_status` on `runId` over `/mcp` in one protocol era. */
async function timeToolCalls(url: string, runId: string, mode: "legacy" | "auto") {
  const client = new Client({ name: "svc-bench", version: "1.0.0" }, {
    versionNegotiation: { mode },
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${BENCH_TOKEN}` } },
  });
  await client.connect(transport);
  try {
    return await timeReads(async () => {
      const result = await client.callTool({
        name: "svc_task_status",
        arguments: { handle: runId },
      });
      if (result.isError) throw new Error(`svc_task_status failed: ${JSON.stringify(result)}`);
    });
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

async function startServer(mode: "bare" | "dashboard", home: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      "--allow-net=127.0.0.1",
      "--allow-sys=uid",
      new URL("./bench_http_server.ts", import.meta.url).pathname,
      mode,
    ],
    env: { SVC_HOME: home },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the ${mode} server exited before listening`);
    text += value;
  }
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${text.trim()}`,
    async stop() {
      child.kill("SIGKILL");
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

/** Requests per second of `LOAD_REQUESTS` GETs of `url`, `LOAD_CONCURRENCY` at a time. */
async function load(url: string, headers: Record<string, string>): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < LOAD_REQUESTS) {
      next++;
      const response = await fetch(url, { headers });
      if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: LOAD_CONCURRENCY }, worker));
  return LOAD_REQUESTS / ((performance.now() - started) / 1000);
}

/** From the POST to the first SSE event, and to the first `call` event. */
async function startToEvents(
  url: string,
): Promise<{ first: number; call: number; runId: string }> {
  const headers = { authorization: `Bearer ${BENCH_TOKEN}` };
  const started = performance.now();
  const answer = await fetch(`${url}/api/workflow/run`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ script: `return await agent("hello");`, fake_dispatch: true }),
  });
  const { run_id } = await answer.json();
  const stream = await fetch(`${url}/api/workflow/${run_id}/events`, { headers });
  const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let first: number | undefined;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) throw new Error("the stream ended before a call event");
      text += value;
      if (first === undefined && text.includes("\nevent: ")) first = performance.now() - started;
      if (text.includes("event: call\n")) {
        return { first: first!, call: performance.now() - started, runId: run_id };
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Waits until the run at `url` has ended: its reads are then of a run that no longer changes. */
async function finished(url: string, headers: Record<string, string>): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const response = await fetch(url, { headers });
    const { state } = await response.json();
    if (isTerminal(state)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the run at ${url} did not end`);
}

/** Runs the HTTP measurements with data directories under `root`. */
export async function measureHttp(root: string): Promise<HttpFigures> {
  const home = await Deno.makeTempDir({ dir: root, prefix: "http-" });
  const bare = await startServer("bare", home);
  const dashboard = await startServer("dashboard", home);
  const figures: HttpFigures = {
    bareRps: [],
    statusRps: [],
    runReadRps: [],
    firstEventMs: [],
    firstCallMs: [],
    restStatusMs: [],
    mcpSessionMs: [],
    mcpStatelessMs: [],
  };
  try {
    const auth = { authorization: `Bearer ${BENCH_TOKEN}` };
    let runId = "";
    for (let run = 0; run <= START_RUNS; run++) {
      const { first, call, runId: started } = await startToEvents(dashboard.url);
      runId = started;
      if (run === 0) continue;
      figures.firstEventMs.push(first);
      figures.firstCallMs.push(call);
    }
    await finished(`${dashboard.url}/api/workflow/${runId}`, auth);
    for (let round = 0; round <= LOAD_ROUNDS; round++) {
      const bareRps = await load(`${bare.url}/`, {});
      const statusRps = await load(`${dashboard.url}/api/status`, auth);
      const runReadRps = await load(`${dashboard.url}/api/workflow/${runId}`, auth);
      if (round === 0) continue;
      figures.bareRps.push(bareRps);
      figures.statusRps.push(statusRps);
      figures.runReadRps.push(runReadRps);
    }
    figures.restStatusMs = await timeReads(async () => {
      const response = await fetch(`${dashboard.url}/api/workflow/${runId}`, { headers: auth });
      if (response.status !== 200) throw new Error(`status answered ${response.status}`);
      await response.arrayBuffer();
    });
    figures.mcpSessionMs = await timeToolCalls(dashboard.url, runId, "legacy");
    figures.mcpStatelessMs = await timeToolCalls(dashboard.url, runId, "auto");
  } finally {
    await bare.stop();
    await dashboard.stop();
  }
  return figures;
}
