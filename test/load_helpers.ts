/**
 * Pieces of the load test and of the benchmark's soak: the real `svc dashboard` process (as
 * `deno task dashboard` starts it, launcher and host), a server-sent-event subscriber that
 * behaves as a browser's `EventSource` does (bearer token, reconnects with `Last-Event-ID`),
 * the resident memory of a process, and percentiles.
 */
import autocannon from "autocannon";
import { type HostProcess, startHostProcess } from "./host_process.ts";

/** The owner the load's token is bound to. */
export const LOAD_OWNER = "load";
/** The load's bearer token. */
export const LOAD_TOKEN = "load-token-0123456789abcdef0123";

/**
 * The operator's caps of a load test or soak: one owner holds every run and stream, far past
 * the defaults for remote callers (docs/SECURITY.md, "Capacity").
 */
export const LOAD_CAPS = {
  admission: {
    host_live_guests: 64,
    owner_live_runs: 64,
    owner_live_tasks: 64,
    owner_event_streams: 1024,
  },
};

/** A `svc dashboard` process serving on 127.0.0.1, under its launcher. */
export type ServedDashboard = HostProcess;

/**
 * Starts `svc dashboard --port 0` as `deno task dashboard` does (launcher, then host) on
 * `<home>/.svc` with one token bound to {@linkcode LOAD_OWNER}, the fake provider's latency
 * `fakeLatencyMs` and {@linkcode LOAD_CAPS}; resolves once it listens. Its `pid` is the
 * launcher's.
 */
export async function startServedDashboard(
  home: string,
  options: { fakeLatencyMs: number },
): Promise<ServedDashboard> {
  await Deno.mkdir(`${home}/.svc`, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(`${home}/.svc/config.json`, JSON.stringify(LOAD_CAPS));
  return await startHostProcess(home, "dashboard", {
    launcher: true,
    args: ["--owner-token", `${LOAD_OWNER}:${LOAD_TOKEN}`],
    env: { SVC_HOME: `${home}/.svc`, SVC_FAKE_LATENCY_MS: String(options.fakeLatencyMs) },
  });
}

/**
 * Resident memory (VmRSS, KiB) of `pid` and of its direct children, read from /proc by a
 * shell (Deno wants every permission to read /proc itself). Undefined once it has exited.
 */
export async function rssOf(pid: number): Promise<{ ownKb: number; childrenKb: number[] }> {
  const script = `pid=$1
    awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || exit 0
    for c in $(cat /proc/$pid/task/*/children 2>/dev/null); do
      awk '/VmRSS/{print $2}' /proc/$c/status 2>/dev/null
    done`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script, "rss", String(pid)],
    stdout: "piped",
    stderr: "null",
  }).output();
  const values = new TextDecoder().decode(output.stdout).split("\n").filter(Boolean).map(Number);
  return { ownKb: values[0] ?? 0, childrenKb: values.slice(1) };
}

/** The host's process id: the launcher's child that is a `deno` serving the dashboard. */
export async function hostPidOf(launcherPid: number): Promise<number | undefined> {
  const output = await new Deno.Command("bash", {
    args: ["-c", "cat /proc/$1/task/*/children 2>/dev/null", "children", String(launcherPid)],
    stdout: "piped",
    stderr: "null",
  }).output();
  const first = new TextDecoder().decode(output.stdout).trim().split(/\s+/)[0];
  return first ? Number(first) : undefined;
}

/** The `p`-th percentile (0..100) of `samples`, nearest rank; NaN for none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? NaN;
}

/** One event a subscriber received. */
export interface ReceivedEvent {
  /** Its `id:` field. */
  id: string;
  /** Its `event:` field. */
  event: string;
  /** Its parsed `data:`. */
  data: Record<string, unknown>;
  /** `Date.now()` when it arrived. */
  receivedAt: number;
}

/** Options of {@linkcode Subscriber}. */
export interface SubscriberOptions {
  /** The bearer token. */
  token: string;
  /** Whether an event is the stream's last: the subscriber stops after it. */
  isLast?: (event: ReceivedEvent) => boolean;
  /**
   * Drop the connection after every this many events and reconnect with `Last-Event-ID`, as a
   * browser does after a network hiccup. None when undefined.
   */
  dropEvery?: number;
  /** Called once per connection that answered 200 and sent its `retry:`. */
  onOpen?: () => void;
  /** Called when a connection closes (any reason). */
  onClose?: () => void;
}

/**
 * A client of one event stream, as a browser's `EventSource`: it sends the token, reads
 * events, and on a dropped connection reconnects with `Last-Event-ID` set to the last id it
 * received. It ends on a 204 (the stream is over), after `isLast`, or on {@linkcode stop}.
 * Every answer that is neither 200 nor 204, and every failed connection, is kept in
 * `failures`.
 */
export class Subscriber {
  /** Every event received, in order. */
  readonly events: ReceivedEvent[] = [];
  /** Unexpected answers and failed connections. */
  readonly failures: string[] = [];
  /** Connections opened (the first and every reconnection). */
  connections = 0;
  /** Events that carried no id (a `reset`, which a continuation must never get). */
  readonly unnamed: string[] = [];
  readonly #url: string;
  readonly #options: SubscriberOptions;
  readonly #stop = new AbortController();
  #done: Promise<void> | undefined;
  #reader: ReadableStreamDefaultReader<string> | undefined;

  /** A subscriber of `url` (not connected until {@linkcode start}). */
  constructor(url: string, options: SubscriberOptions) {
    this.#url = url;
    this.#options = options;
  }

  /** The id of the last event received, if any. */
  get lastId(): string | undefined {
    return this.events.at(-1)?.id;
  }

  /** Connects and follows in the background; the promise ends with the subscription. */
  start(): Promise<void> {
    this.#done ??= this.#follow();
    return this.#done;
  }

  /** Closes the connection and ends the subscription. */
  async stop(): Promise<void> {
    this.#stop.abort();
    // Aborting the request's signal does not end a body already being read: cancel it.
    await this.#reader?.cancel().catch(() => {});
    await this.#done;
  }

  async #follow(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      const ended = await this.#connect();
      if (ended) return;
    }
  }

  /** One connection; true when the subscription is over. */
  async #connect(): Promise<boolean> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#options.token}`,
      accept: "text/event-stream",
    };
    const last = this.lastId;
    if (last !== undefined) headers["last-event-id"] = last;
    const drop = new AbortController();
    const signal = AbortSignal.any([this.#stop.signal, drop.signal]);
    let response: Response;
    this.connections++;
    try {
      response = await fetch(this.#url, { headers, signal });
    } catch (error) {
      if (this.#stop.signal.aborted) return true;
      this.failures.push(`connect: ${error instanceof Error ? error.message : String(error)}`);
      return this.failures.length > 20;
    }
    if (response.status === 204) {
      await response.body?.cancel();
      return true;
    }
    if (response.status !== 200 || !response.body) {
      this.failures.push(`answer ${response.status}: ${(await response.text()).slice(0, 200)}`);
      return this.failures.length > 20;
    }
    let opened = false;
    let sinceConnect = 0;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    this.#reader = reader;
    if (this.#stop.signal.aborted) await reader.cancel().catch(() => {});
    let buffer = "";
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return this.#stop.signal.aborted;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = parseBlock(block);
          if (fields.retry !== undefined && !opened) {
            opened = true;
            this.#options.onOpen?.();
          }
          if (fields.event === undefined) continue;
          if (fields.id === undefined) {
            this.unnamed.push(fields.event);
            continue;
          }
          const event: ReceivedEvent = {
            id: fields.id,
            event: fields.event,
            data: JSON.parse(fields.data ?? "null"),
            receivedAt: Date.now(),
          };
          this.events.push(event);
          sinceConnect++;
          if (this.#options.isLast?.(event)) return true;
          if (this.#options.dropEvery !== undefined && sinceConnect >= this.#options.dropEvery) {
            drop.abort();
            return false;
          }
        }
      }
    } catch (error) {
      if (this.#stop.signal.aborted) return true;
      if (drop.signal.aborted) return false;
      this.failures.push(`read: ${error instanceof Error ? error.message : String(error)}`);
      return this.failures.length > 20;
    } finally {
      if (opened) this.#options.onClose?.();
      await reader.cancel().catch(() => {});
    }
  }
}

/** The fields of one event block; comments are skipped. */
function parseBlock(block: string): { id?: string; event?: string; data?: string; retry?: number } {
  const out: { id?: string; event?: string; data?: string; retry?: number } = {};
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) out.id = line.slice(4);
    else if (line.startsWith("event: ")) out.event = line.slice(7);
    else if (line.startsWith("data: ")) out.data = line.slice(6);
    else if (line.startsWith("retry: ")) out.retry = Number(line.slice(7));
  }
  return out;
}

/** One request of an autocannon load; `setupRequest` may change it before each send. */
export interface CannonRequest {
  /** The method. */
  method: string;
  /** The path and query. */
  path: string;
  /** Rewrites the request before it is sent (autocannon calls it each time). */
  setupRequest?: (request: { path: string }) => { path: string };
}

/** The parts of autocannon's result the load and the soak read. */
export interface CannonResult {
  /** Failed connections and timeouts. */
  errors: number;
  /** Requests that got no answer in time. */
  timeouts: number;
  /** Answers outside 200..299. */
  non2xx: number;
  /** Answers in 200..299. */
  "2xx": number;
  /** Answers by status. */
  statusCodeStats: Record<string, { count: number }>;
}

/** The options of autocannon that the load and the soak set. */
export interface CannonOptions {
  url: string;
  connections: number;
  amount?: number;
  duration?: number;
  overallRate?: number;
  timeout: number;
  headers: Record<string, string>;
  requests: CannonRequest[];
}

/** A running autocannon load: every answer is reported with its latency in ms. */
export interface CannonInstance {
  /** Listens to every answer. */
  on(
    event: "response",
    listener: (client: unknown, status: number, bytes: number, ms: number) => void,
  ): void;
  /** Ends the load early (the callback still gets the result). */
  stop(): void;
}

/**
 * autocannon (it ships no types; this is the part of its API used here), run under Deno's
 * Node compatibility in the process that measures.
 */
export const cannon: (
  options: CannonOptions,
  done: (error: Error | null, result: CannonResult) => void,
) => CannonInstance = autocannon;
