/**
 * The scale of one host (`deno task bench --only scale`): N runs started at once in one
 * dashboard process (`bench_scale_host.ts`), each waiting on slow fake calls, for N in
 * {@linkcode SCALE_SIZES}. Per N, in a fresh host:
 *
 * - the host's RSS with the N runs live (and per run, over the idle host's);
 * - the RSS of each guest (median; a guest's is its whole process tree: prlimit, bwrap, its
 *   init and the guest's deno), and all of theirs together;
 * - the host's event-loop delay p99 (a 10 ms timer's lateness) over the burst and a hold;
 * - the time to admit the last run (its `start()` returned) and to its first `agent()` call
 *   (every guest up), against one run's start to its first call in the same host; and the
 *   host's CPU time per run over the burst and per second of the hold;
 * - the dashboard's read latency meanwhile: sequential authenticated reads from this process
 *   over a real port, `GET /api/workflow/{run_id}` of a finished run and `GET /api/status` in
 *   turn, against the same reads of the idle host.
 *
 * Every host is stopped at the end (its runs cancelled, its guests gone, which is checked).
 * @module
 */
import { percentile } from "../test/load_helpers.ts";
import { limited } from "./bench_limit.ts";
import { SCALE_TOKEN } from "./bench_scale_host.ts";

/** The burst sizes. */
export const SCALE_SIZES = [50, 100, 200] as const;

/** The fake provider's latency: every run waits this long on each call, ms. */
const FAKE_LATENCY_MS = 10_000;

/** How long the N runs stay live after the last one is, ms. */
const HOLD_MS = 5000;

/** The pause between two reads of the dashboard, ms. */
const READ_GAP_MS = 20;

/** How long one host may take from its start to its exit, ms. */
const HOST_LIMIT_MS = 240_000;

/** What one burst of N runs measured. */
export interface ScaleSample {
  n: number;
  /** The idle host: RSS, event-loop delay p99, one run's start to its first call, read p99. */
  idleRssMib: number;
  idleLoopP99Ms: number;
  singleLiveMs: number;
  /** p99 of `GET /api/workflow/{run_id}` and of `GET /api/status` on the idle host. */
  idleReadP99Ms: number;
  idleStatusP99Ms: number;
  /** The host with N runs live (after the hold), and per run over the idle host, KiB. */
  liveRssMib: number;
  rssPerRunKib: number;
  /** Guest processes seen, the median RSS of one, and all of theirs together. */
  guests: number;
  guestRssMib: number;
  guestsRssMib: number;
  /** Event-loop delay p99 and max over the burst and the hold. */
  loopP99Ms: number;
  loopMaxMs: number;
  /** From the burst's start to the last `start()` returning, and to the last first call. */
  admitLastMs: number;
  liveLastMs: number;
  /**
   * The host's CPU time (user and system) per run: over the burst, and per second of the hold
   * (the runs waiting on their calls). Unlike wall times, a busy machine changes them little.
   */
  burstCpuPerRunMs: number;
  holdCpuPerRunMsPerS: number;
  /**
   * Ledger (and board) store operations per run over the burst: reads (`get` and `list` calls),
   * commits, and commits whose checks failed; and reads and commits per run per second of the
   * hold. The dashboard reads taken meanwhile are counted in them (a few per 40 ms).
   */
  burstReadsPerRun: number;
  burstCommitsPerRun: number;
  burstConflictsPerRun: number;
  holdReadsPerRunPerS: number;
  holdCommitsPerRunPerS: number;
  /** `GET /api/workflow/{run_id}` over the burst and the hold. */
  readP50Ms: number;
  readP99Ms: number;
  /** `GET /api/status` over the burst and the hold. */
  statusP50Ms: number;
  statusP99Ms: number;
  /** Reads of both kinds over the burst and the hold. */
  reads: number;
}

/** A phase line of the host. */
interface Phase {
  phase: string;
  [key: string]: unknown;
}

/**
 * The host's command. With `SVC_SCALE_CPU_PROF` naming a directory, each host writes a V8 CPU
 * profile of its whole life there (`--cpu-prof`), for "where the time goes" at a size.
 */
function hostCommand(home: string, n: number): Deno.Command {
  const profileDir = Deno.env.get("SVC_SCALE_CPU_PROF");
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(profileDir
        ? [
          "--cpu-prof",
          `--cpu-prof-dir=${profileDir}`,
          `--cpu-prof-name=scale_${n}_${Date.now()}.cpuprofile`,
        ]
        : []),
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      "--allow-net=127.0.0.1",
      "--allow-sys=uid",
      new URL("./bench_scale_host.ts", import.meta.url).pathname,
      String(n),
      String(FAKE_LATENCY_MS),
      String(HOLD_MS),
    ],
    env: { SVC_HOME: home },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  });
}

/** One timed read: which endpoint, in which phase, how long. */
interface Read {
  what: "status" | "run";
  phase: string;
  ms: number;
}

/**
 * Sequential authenticated reads until `stop`, taking turns: `GET /api/status` (which merges
 * the host's live work) and `GET /api/workflow/{run_id}` of a finished run (a plain read).
 */
async function readLoop(
  base: string,
  runId: string,
  phase: () => string,
  stop: AbortSignal,
): Promise<Read[]> {
  const samples: Read[] = [];
  const headers = { authorization: `Bearer ${SCALE_TOKEN}` };
  const urls = { status: `${base}/api/status`, run: `${base}/api/workflow/${runId}` } as const;
  for (let i = 0; !stop.aborted; i++) {
    const what = i % 2 === 0 ? "status" : "run";
    const at = phase();
    const t0 = performance.now();
    const response = await fetch(urls[what], { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${urls[what]} answered ${response.status}`);
    samples.push({ what, phase: at, ms: performance.now() - t0 });
    await new Promise((resolve) => setTimeout(resolve, READ_GAP_MS));
  }
  return samples;
}

/** Those of `pids` still running (a zombie is not), with their state and command line. */
async function running(pids: number[]): Promise<string[]> {
  if (pids.length === 0) return [];
  const output = await new Deno.Command("ps", {
    args: ["-o", "pid=,stat=,args=", "-p", pids.join(",")],
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(output.stdout).split("\n").map((line) => line.trim())
    .filter((line) => line !== "" && !/^\d+\s+Z/.test(line));
}

/** Those of `pids` still running two seconds after their host exited. */
async function outliving(pids: number[]): Promise<string[]> {
  let left = await running(pids);
  for (let i = 0; i < 40 && left.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    left = await running(pids);
  }
  return left;
}

function p99(values: number[]): number {
  return percentile(values, 99);
}

function median(values: number[]): number {
  return percentile(values, 50);
}

/** The host's phase lines, in order, parsed. */
async function* phases(stdout: ReadableStream<Uint8Array>): AsyncGenerator<Phase> {
  let buffer = "";
  for await (const chunk of stdout.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 1);
      if (line.startsWith("{")) yield JSON.parse(line) as Phase;
    }
  }
}

/**
 * The guests under the host `pid`: every process of their trees, and the RSS (KiB) of each
 * guest, the sum over its tree (prlimit, bwrap and its init, the guest's deno). Read by a shell:
 * Deno wants every grant to read /proc.
 */
async function guestsOf(pid: number): Promise<{ pids: number[]; kb: number[] }> {
  const script = `kids() { cat /proc/$1/task/*/children 2>/dev/null; }
    for g in $(kids $1); do
      sum=0; todo=$g
      while [ -n "$todo" ]; do
        next=""
        for p in $todo; do
          echo "pid $p"
          v=$(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null); sum=$((sum + \${v:-0}))
          next="$next $(kids $p)"
        done
        todo=$(echo $next)
      done
      echo "guest $sum"
    done`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script, "guests", String(pid)],
    stdout: "piped",
  }).output();
  const lines = new TextDecoder().decode(output.stdout).split("\n");
  const field = (kind: string) =>
    lines.filter((line) => line.startsWith(`${kind} `)).map((line) =>
      Number(line.slice(kind.length + 1))
    );
  return { pids: field("pid"), kb: field("guest") };
}

/** Follows one host's phases while reading its dashboard; the sample once it has exited. */
async function follow(child: Deno.ChildProcess, n: number): Promise<ScaleSample> {
  const seen: Record<string, Phase> = {};
  let current = "starting";
  const stop = new AbortController();
  let reads: Promise<Read[]> | undefined;
  let base = "";
  let guests = { pids: [] as number[], kb: [] as number[] };
  for await (const line of phases(child.stdout)) {
    seen[line.phase] = line;
    current = line.phase;
    // Profiling: the store's operations by key, for "where the time goes".
    if (Deno.env.get("SVC_SCALE_CPU_PROF") && (line.burstOps || line.holdOps)) {
      console.error(
        `bench: scale ${n} ${line.phase}: ${JSON.stringify(line.burstOps ?? line.holdOps)}`,
      );
    }
    if (line.phase === "listening") base = `http://127.0.0.1:${line.port}`;
    else if (line.phase === "quiet") {
      reads = readLoop(base, String(line.runId), () => current, stop.signal);
    } else if (line.phase === "live") {
      // At the hold's start: the host cancels its runs right after the hold.
      guests = await guestsOf(child.pid);
    } else if (line.phase === "held") stop.abort();
  }
  const status = await child.status;
  if (!status.success || !seen.done || !reads) {
    throw new Error(`the scale host of ${n} runs exited with status ${status.code}`);
  }
  const left = await outliving(guests.pids);
  if (left.length > 0) {
    throw new Error(`guests of the ${n}-run host outlived it:\n${left.join("\n")}`);
  }
  return sampleOf(n, seen, await reads, guests.kb);
}

function sampleOf(
  n: number,
  seen: Record<string, Phase>,
  reads: Read[],
  guestKb: number[],
): ScaleSample {
  const num = (phase: string, key: string) => Number(seen[phase]?.[key]);
  const idleLoop = seen.burst?.loopMs as number[];
  const loop = seen.done?.loopMs as number[];
  const idle = (what: Read["what"]) =>
    reads.filter((r) => r.what === what && r.phase === "quiet").map((r) => r.ms);
  const busy = (what: Read["what"]) =>
    reads.filter((r) => r.what === what && (r.phase === "burst" || r.phase === "live"))
      .map((r) => r.ms);
  return {
    n,
    idleRssMib: num("burst", "rssKb") / 1024,
    idleLoopP99Ms: p99(idleLoop),
    singleLiveMs: num("burst", "singleLiveMs"),
    idleReadP99Ms: p99(idle("run")),
    idleStatusP99Ms: p99(idle("status")),
    liveRssMib: num("held", "rssKb") / 1024,
    rssPerRunKib: (num("held", "rssKb") - num("burst", "rssKb")) / n,
    guests: guestKb.length,
    guestRssMib: median(guestKb) / 1024,
    guestsRssMib: guestKb.reduce((a, b) => a + b, 0) / 1024,
    loopP99Ms: p99(loop),
    loopMaxMs: Math.max(...loop),
    admitLastMs: num("live", "admitLastMs"),
    liveLastMs: num("live", "liveLastMs"),
    burstCpuPerRunMs: num("live", "burstCpuMs") / n,
    holdCpuPerRunMsPerS: num("held", "holdCpuMs") / num("held", "holdS") / n,
    ...opsOf(n, seen),
    readP50Ms: median(busy("run")),
    readP99Ms: p99(busy("run")),
    statusP50Ms: median(busy("status")),
    statusP99Ms: p99(busy("status")),
    reads: busy("run").length + busy("status").length,
  };
}

/** A phase's counts of store operations, as the host emits them. */
interface OpCounts {
  gets: number;
  lists: number;
  commits: number;
  conflicts: number;
}

/** The store operations per run of the burst and per run per second of the hold. */
function opsOf(n: number, seen: Record<string, Phase>) {
  const burst = seen.live?.burstOps as OpCounts;
  const hold = seen.held?.holdOps as OpCounts;
  const holdS = Number(seen.held?.holdS);
  return {
    burstReadsPerRun: (burst.gets + burst.lists) / n,
    burstCommitsPerRun: burst.commits / n,
    burstConflictsPerRun: burst.conflicts / n,
    holdReadsPerRunPerS: (hold.gets + hold.lists) / holdS / n,
    holdCommitsPerRunPerS: hold.commits / holdS / n,
  };
}

/** One burst of `n` runs in a fresh host whose data directory is under `root`. */
export async function measureScale(root: string, n: number): Promise<ScaleSample> {
  const home = await Deno.makeTempDir({ dir: root, prefix: "scale-" });
  await Deno.chmod(home, 0o700);
  await Deno.writeTextFile(
    `${home}/config.json`,
    JSON.stringify({ admission: { host_live_guests: Math.max(n, 8) } }),
  );
  const child = hostCommand(home, n).spawn();
  try {
    return await limited(`the scale host of ${n} runs`, follow(child, n), HOST_LIMIT_MS);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // It has exited.
    }
    await child.status;
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}
