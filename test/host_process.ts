/**
 * A serving host (`svc dashboard`, `svc daemon` or `svc a2a-server`) as its own process with the launcher's kind
 * of grants, not under the launcher, so that a signal (a crash test's SIGKILL) reaches the host
 * itself. Optionally started under a prefix command (bubblewrap with a small tmpfs, say).
 */
import assert from "node:assert/strict";
import { ROOT, svcTaskCommand } from "./helpers.ts";

/** A host process started by {@linkcode startHostProcess}. */
export interface HostProcess extends AsyncDisposable {
  /** Its base URL. */
  url: string;
  /** Its process id (the prefix command's, when there is one). */
  pid: number;
  /** What it printed on standard error so far. */
  lines: string[];
  /** Its standard input, when asked for (`stdin: true`). */
  stdin: WritableStreamDefaultWriter<Uint8Array> | undefined;
  /**
   * Ends it with `signal` (with `stdin: true`, by closing its input first) and waits; resolves
   * to its exit code.
   */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** Options of {@linkcode startHostProcess}. */
export interface HostProcessOptions {
  /** More environment (SVC_FAKE_LATENCY_MS, say). */
  env?: Record<string, string>;
  /** A command line the host runs under, ending where the host's own command begins. */
  prefix?: string[];
  /** Pipe standard input, for a prefix that reads commands from it. */
  stdin?: boolean;
  /**
   * Start it as `deno task svc` does (the launcher, then the host with its narrow grants)
   * instead of the host alone; a signal then reaches the launcher.
   */
  launcher?: boolean;
  /** More arguments after `--port 0`. */
  args?: string[];
}

/** How long a host may take to listen, in ms. */
const STARTUP_MS = 60_000;

const URL_LINE = /(?:dashboard|daemon|A2A server) on (http:\/\/127\.0\.0\.1:\d+)/;

/** Starts `svc <command> --port 0` on `home` (SVC_HOME); resolves once it listens. */
export async function startHostProcess(
  home: string,
  command: "dashboard" | "daemon" | "a2a-server",
  options: HostProcessOptions = {},
): Promise<HostProcess> {
  const task = options.launcher ? await svcTaskCommand() : undefined;
  const host = task ? [task.command, ...task.args, command, "--port", "0"] : [
    Deno.execPath(),
    "run",
    "--no-prompt",
    "--allow-read",
    `--allow-write=${home}`,
    "--allow-run",
    "--allow-env",
    "--allow-net=127.0.0.1",
    "--config",
    `${ROOT}/deno.json`,
    `${ROOT}/cli/main.ts`,
    command,
    "--port",
    "0",
  ];
  const [program, ...args] = [...(options.prefix ?? []), ...host, ...(options.args ?? [])];
  const child = new Deno.Command(program!, {
    args,
    env: {
      HOME: home,
      SVC_HOME: home,
      NO_COLOR: "1",
      PATH: Deno.env.get("PATH") ?? "",
      ...options.env,
    },
    clearEnv: true,
    cwd: ROOT,
    stdin: options.stdin ? "piped" : "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let url: string | undefined;
  // A host that never listens (under a prefix that keeps its stderr open) must not hang the test.
  const deadline = setTimeout(() => child.kill("SIGKILL"), STARTUP_MS);
  while (url === undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    lines.push(...parts);
    url = lines.map((l) => URL_LINE.exec(l)?.[1]).find(Boolean);
  }
  clearTimeout(deadline);
  if (url === undefined) {
    await child.status;
    assert.fail(`the ${command} did not start:\n${lines.join("\n")}${buffer}`);
  }
  const rest = (async () => {
    while (true) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: "" }));
      if (done) return;
      buffer += value;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    }
  })();
  const stdin = options.stdin ? child.stdin.getWriter() : undefined;
  let ended: Promise<number> | undefined;
  const stop = (signal: Deno.Signal = "SIGTERM") =>
    ended ??= (async () => {
      if (stdin) {
        // A prefix that reads commands stops its host at the end of its input.
        await stdin.close().catch(() => {});
        const timer = setTimeout(() => child.kill("SIGKILL"), STARTUP_MS);
        await child.status;
        clearTimeout(timer);
      }
      try {
        child.kill(signal);
      } catch {
        // It ended already.
      }
      const status = await child.status;
      await rest;
      return status.code;
    })();
  return {
    url,
    pid: child.pid,
    lines,
    stdin,
    stop,
    [Symbol.asyncDispose]: async () => {
      await stop();
    },
  };
}
