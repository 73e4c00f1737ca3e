/** Shared pieces of the tests: temporary homes, in-process runs and command-line runs. */
import assert from "node:assert/strict";
import {
  createDispatcher,
  type Dispatcher,
  type DispatcherOptions,
  type DispatchRequest,
  type DispatchResult,
  type Provider,
} from "../src/dispatch/mod.ts";
import type { JsonValue } from "../src/schemas/mod.ts";
import {
  type RunEvent,
  RunManager,
  type RunManagerOptions,
  type RunStatus,
} from "../src/engine/mod.ts";
import { type Caller, type Ledger, openLedger } from "../src/ledger/mod.ts";

/** The caller tests act as, unless they test the owner rule: the command line's default owner. */
export const LOCAL: Caller = { owner: "local" };
/** An administrator: sees every owner's records. */
export const ADMIN: Caller = { owner: "admin", admin: true };

/** The repository root, for paths of fixtures and the CLI. */
export const ROOT: string = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Path of a file under test/fixtures. */
export function fixture(name: string): string {
  return `${ROOT}/test/fixtures/${name}`;
}

/** Whether a file or directory exists at `path`. */
export async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** A temporary directory that removes itself when disposed. */
export async function tempDir(prefix = "svc-test-"): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  };
}

/** Options of {@linkcode testManager}: the manager's, with a dispatcher built from `fakeLatencyMs` unless given. */
export type TestManagerOptions = Partial<RunManagerOptions> & {
  fakeLatencyMs?: number;
  home?: string;
};

/** A run manager over a temporary SVC_HOME; closing it cancels its runs, closes the ledger and removes the home. */
export async function testManager(
  options: TestManagerOptions = {},
): Promise<{ manager: RunManager; ledger: Ledger; home: string } & AsyncDisposable> {
  const temp = options.home === undefined ? await tempDir("svc-home-") : undefined;
  const home = options.home ?? temp!.path;
  const { fakeLatencyMs, home: _home, ...rest } = options;
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: fakeLatencyMs ?? 0 }),
    ledger,
    projectDir: home,
    ...rest,
  });
  return {
    manager,
    ledger,
    home,
    async [Symbol.asyncDispose]() {
      await manager.close();
      ledger.close();
      await temp?.[Symbol.asyncDispose]();
    },
  };
}

/** Follows a run's event feed until `predicate` holds for an event (or the run ends: then it throws). */
export async function untilEvent(
  manager: RunManager,
  runId: string,
  predicate: (event: RunEvent) => boolean,
): Promise<void> {
  for await (const { event } of manager.events(runId, LOCAL)) if (predicate(event)) return;
  throw new Error(`run ${runId} ended before the awaited event`);
}

/** Every event of a run's feed, to its end. */
export async function feedOf(manager: RunManager, runId: string): Promise<RunEvent[]> {
  return (await Array.fromAsync(manager.events(runId, LOCAL))).map((item) => item.event);
}

/** Runs `script` to its end in a fresh manager and returns the final status. */
export async function runScript(
  script: string,
  request: Record<string, unknown> = {},
  options: TestManagerOptions = {},
): Promise<RunStatus> {
  await using t = await testManager(options);
  const started = await t.manager.start({ script, ...request }, LOCAL);
  return await t.manager.wait(started.run_id, LOCAL);
}

/** Output of one command-line run. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (stdin: `input`, else nothing), and returns its exit status and output. */
export async function runCommand(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; input?: string; clearEnv?: boolean } = {},
): Promise<CliResult> {
  // `deno task test` sets INIT_CWD, and `deno task svc` would keep it: the launcher would then
  // run svc in the checkout, not in `cwd`. Commands start without it unless a test sets it.
  const { INIT_CWD: _inherited, ...inherited } = options.clearEnv ? {} : Deno.env.toObject();
  const child = new Deno.Command(command, {
    args,
    env: { ...inherited, ...options.env },
    clearEnv: true,
    cwd: options.cwd ?? ROOT,
    stdin: options.input === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.input)).catch(() => {});
    await writer.close().catch(() => {});
  }
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/**
 * `svc workflow run <args>` as its own host process, without the launcher, so that a signal
 * (the crash tests' SIGKILL) reaches the host itself; its standard error is piped.
 */
export function spawnWorkflowHost(
  args: readonly string[],
  env: Record<string, string>,
): Deno.ChildProcess {
  return denoCommand({
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      `${ROOT}/cli/main.ts`,
      "workflow",
      "run",
      ...args,
    ],
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/**
 * The command line of `deno task svc` (from deno.json), with this Deno binary and absolute
 * paths: the launcher that starts the host with narrow grants.
 */
export function svcTaskCommand(): Promise<{ command: string; args: string[] }> {
  return Promise.resolve(svcTask());
}

function svcTask(): { command: string; args: string[] } {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  const [deno, ...args] = String(config.tasks.svc).split(" ");
  assert.equal(deno, "deno", "the svc task runs deno");
  return {
    command: Deno.execPath(),
    args: args.map((arg) => arg.startsWith("cli/") ? `${ROOT}/${arg}` : arg),
  };
}

/** Options of a Deno subprocess: `args` are the command's own. */
export type ProcessOptions = Deno.CommandOptions & { args: string[] };

/** A command that runs this Deno binary (the one running the tests) with `options`. */
export function denoCommand(options: ProcessOptions): Deno.Command {
  return new Deno.Command(Deno.execPath(), options);
}

/**
 * A command that runs `svc <args>` as `deno task svc` does, through the launcher that starts
 * the host with narrow grants; `options.args` follow `svc`.
 */
export function svcCommand(options: ProcessOptions): Deno.Command {
  const task = svcTask();
  return new Deno.Command(task.command, { ...options, args: [...task.args, ...options.args] });
}

/** Runs `svc` from the checkout, exactly as `deno task svc` does, in a fresh SVC_HOME. */
export async function runCli(
  args: string[],
  options: { env?: Record<string, string>; home?: string; cwd?: string; input?: string } = {},
): Promise<CliResult> {
  await using home = await tempDir("svc-home-");
  const task = await svcTaskCommand();
  return await runCommand(task.command, [...task.args, ...args], {
    env: { SVC_HOME: options.home ?? home.path, NO_COLOR: "1", ...options.env },
    cwd: options.cwd,
    ...(options.input !== undefined ? { input: options.input } : {}),
  });
}

/** Texts of the run's narration entries of one kind. */
export function narration(status: RunStatus, kind: string): string[] {
  return status.narration.filter((entry) => entry.kind === kind).map((entry) => entry.text);
}

/** A provider for tests: answers through `answer`, and records how many calls ran at once. */
export function scriptedProvider(
  name: string,
  answer: (
    prompt: string,
    attempt: number,
  ) => { output: JsonValue; delayMs?: number; costUsd?: number | null },
): Provider & { calls: number; maxActive: number } {
  const attempts = new Map<string, number>();
  let active = 0;
  const provider = {
    name,
    kind: "api" as const,
    calls: 0,
    maxActive: 0,
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      provider.calls++;
      active++;
      provider.maxActive = Math.max(provider.maxActive, active);
      try {
        const attempt = (attempts.get(request.prompt) ?? 0) + 1;
        attempts.set(request.prompt, attempt);
        const { output, delayMs = 0, costUsd = 0 } = answer(request.prompt, attempt);
        if (delayMs > 0) {
          request.signal.throwIfAborted();
          await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(resolve, delayMs);
            request.signal.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(request.signal.reason);
            }, { once: true });
          });
        }
        return {
          output,
          usage: { input_tokens: 10, output_tokens: 10 },
          cost_usd: costUsd,
          provider: name,
          model: `${name}-model`,
        };
      } finally {
        active--;
      }
    },
  };
  return provider;
}

/** A dispatcher whose `fake` calls are counted, so tests can prove that replayed calls never dispatch. */
export function countingDispatcher(
  options: DispatcherOptions = {},
): Dispatcher & { count: () => number } {
  const inner = createDispatcher({ fakeLatencyMs: 0, ...options });
  let count = 0;
  return {
    providers: () => inner.providers(),
    status: () => inner.status(),
    dispatch(request, dispatchOptions) {
      count++;
      return inner.dispatch(request, dispatchOptions);
    },
    admit: (options, context) => inner.admit(options, context),
    count: () => count,
  };
}

/** Live processes (not zombies) whose command line mentions `marker` (a guest's scratch path). */
export async function processesMentioning(marker: string): Promise<string[]> {
  // Deno wants every permission to read /proc/<pid>/cmdline; ps(1) reads it for us.
  const output = await new Deno.Command("ps", {
    args: ["-eo", "pid=,stat=,args="],
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(output.stdout).split("\n").filter((line) => {
    const [pid, stat] = line.trim().split(/\s+/, 2);
    return line.includes(marker) && !stat?.startsWith("Z") && Number(pid) !== Deno.pid;
  });
}

/** The TypeScript modules under `dir` of the checkout (`src`, `cli`), as paths from its root. */
export async function sourceModules(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}/${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await sourceModules(path));
    else if (entry.name.endsWith(".ts")) files.push(path);
  }
  return files;
}
