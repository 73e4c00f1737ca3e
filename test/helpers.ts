/** Shared pieces of the tests: temporary homes, in-process runs and command-line runs. */
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

/** Runs `svc` from the checkout, exactly as `deno task svc` does, in a fresh SVC_HOME. */
export async function runCli(
  args: string[],
  options: { env?: Record<string, string>; home?: string; cwd?: string } = {},
): Promise<CliResult> {
  await using home = await tempDir("svc-home-");
  const permissions = ["--allow-read", "--allow-write", "--allow-run", "--allow-env"];
  return await runCommand(
    Deno.execPath(),
    ["run", ...permissions, `${ROOT}/cli/main.ts`, ...args],
    {
      env: { SVC_HOME: options.home ?? home.path, NO_COLOR: "1", ...options.env },
      cwd: options.cwd,
    },
  );
}

/** Texts of the run's narration entries of one kind. */
export function narration(status: RunStatus, kind: string): string[] {
  return status.narration.filter((entry) => entry.kind === kind).map((entry) => entry.text);
}
