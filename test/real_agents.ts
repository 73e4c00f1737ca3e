/**
 * Shared pieces of the real-tool suite: where the real coding-agent command lines are (CI
 * installs them from the npm registry and names their directory in `SVC_TEST_AGENTS`), a
 * throw-away HOME per test, and a test wrapper that fails, not skips, when CI asked for the
 * tools and one is missing.
 * @module
 */
import { TESTED_VERSIONS } from "../src/dispatch/harness/tested_versions.ts";
import type { Reply, Responder } from "./model_standin/mod.ts";
import { tempDir } from "./helpers.ts";

/** The four real tools. */
export type RealTool = keyof typeof TESTED_VERSIONS;

/** The directory of the real tools' binaries, when this run has them. */
export function agentsDir(): string | undefined {
  const dir = Deno.env.get("SVC_TEST_AGENTS");
  return dir === undefined || dir === "" ? undefined : dir;
}

/** The path of a real tool's binary; throws when `SVC_TEST_AGENTS` is set and it is missing. */
export function agentBin(tool: RealTool): string {
  const dir = agentsDir();
  if (dir === undefined) throw new Error("SVC_TEST_AGENTS is not set");
  const path = `${dir}/${tool}`;
  try {
    Deno.statSync(path);
  } catch {
    throw new Error(`the real ${tool} is not installed at ${path} (deno task agents:install)`);
  }
  return path;
}

/** A throw-away HOME (with its own TMPDIR inside) for one test of a real tool. */
export interface AgentHome extends AsyncDisposable {
  /** The HOME directory. */
  home: string;
  /** A temporary directory of the test's own, under HOME. */
  tmp: string;
  /** A working directory for calls, under HOME. */
  work: string;
}

/** Makes a throw-away HOME with `tmp/` and `work/` inside. */
export async function agentHome(): Promise<AgentHome> {
  const dir = await tempDir("svc-agent-home-");
  const tmp = `${dir.path}/tmp`;
  const work = `${dir.path}/work`;
  await Deno.mkdir(tmp);
  await Deno.mkdir(work);
  return { home: dir.path, tmp, work, [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose]() };
}

/**
 * A test of a real tool: run when `SVC_TEST_AGENTS` is set (CI sets it; a missing binary then
 * fails the test), ignored otherwise.
 */
export function realToolTest(
  tool: RealTool,
  name: string,
  fn: (bin: string) => Promise<void>,
): void {
  Deno.test({
    name: `real ${tool} ${TESTED_VERSIONS[tool].version}: ${name}`,
    ignore: agentsDir() === undefined,
    fn: () => fn(agentBin(tool)),
  });
}

/**
 * Scripts one round of tool calls: a request without tool results gets `calls` (and `usage`),
 * the request carrying their results gets a text that quotes them, `tool said: <results>`.
 */
export function toolThenText(
  calls: NonNullable<Reply["toolCalls"]>,
  usage?: Reply["usage"],
): Responder {
  return (request) =>
    request.toolResults.length === 0
      ? { toolCalls: calls, ...(usage ? { usage } : {}) }
      : { text: `tool said: ${request.toolResults.map((r) => r.content).join(" | ")}` };
}

/** Waits until `check` holds, for at most 30 s; the error names `what` was awaited. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what = "the awaited condition",
): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
