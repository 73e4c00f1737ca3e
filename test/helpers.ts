/** Shared pieces of the tests: temporary homes, in-process runs and command-line runs. */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager, type RunManagerOptions, type RunStatus } from "../src/engine/mod.ts";

/** The repository root, for paths of fixtures and the CLI. */
export const ROOT: string = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Path of a file under test/fixtures. */
export function fixture(name: string): string {
  return `${ROOT}/test/fixtures/${name}`;
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

/** A run manager over a temporary SVC_HOME; closing it cancels its runs and removes the home. */
export async function testManager(
  options: Partial<RunManagerOptions> & { fakeLatencyMs?: number } = {},
): Promise<{ manager: RunManager; home: string } & AsyncDisposable> {
  const home = await tempDir("svc-home-");
  const { fakeLatencyMs, ...rest } = options;
  const manager = new RunManager({
    dispatcher: createDispatcher({ fakeLatencyMs: fakeLatencyMs ?? 0 }),
    home: home.path,
    ...rest,
  });
  return {
    manager,
    home: home.path,
    async [Symbol.asyncDispose]() {
      await manager.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** Runs `script` to its end in a fresh manager and returns the final status. */
export async function runScript(
  script: string,
  request: Record<string, unknown> = {},
  options: Partial<RunManagerOptions> & { fakeLatencyMs?: number } = {},
): Promise<RunStatus> {
  await using t = await testManager(options);
  const started = t.manager.start({ script, ...request });
  return await t.manager.wait(started.run_id);
}

/** Output of one command-line run. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end with no stdin, and returns its exit status and output. */
export async function runCommand(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<CliResult> {
  const output = await new Deno.Command(command, {
    args,
    env: options.env,
    cwd: options.cwd ?? ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/**
 * The command line of `deno task svc` (from deno.json), with this Deno binary and absolute
 * paths: the launcher that starts the host with narrow grants.
 */
export async function svcTaskCommand(): Promise<{ command: string; args: string[] }> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
  const [deno, ...args] = String(config.tasks.svc).split(" ");
  assert.equal(deno, "deno", "the svc task runs deno");
  return {
    command: Deno.execPath(),
    args: args.map((arg) => arg.startsWith("cli/") ? `${ROOT}/${arg}` : arg),
  };
}

/** Runs `svc` from the checkout, exactly as `deno task svc` does, in a fresh SVC_HOME. */
export async function runCli(
  args: string[],
  options: { env?: Record<string, string>; home?: string; cwd?: string } = {},
): Promise<CliResult> {
  await using home = await tempDir("svc-home-");
  const task = await svcTaskCommand();
  return await runCommand(task.command, [...task.args, ...args], {
    env: { SVC_HOME: options.home ?? home.path, NO_COLOR: "1", ...options.env },
    cwd: options.cwd,
  });
}

/** Texts of the run's narration entries of one kind. */
export function narration(status: RunStatus, kind: string): string[] {
  return status.narration.filter((entry) => entry.kind === kind).map((entry) => entry.text);
}
