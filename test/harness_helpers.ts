/** Shared pieces of the harness provider tests: the stubs, call directories, process checks. */
import assert from "node:assert/strict";
import type { DispatchRequest } from "../src/dispatch/mod.ts";
import type { AgentOptions } from "../src/schemas/mod.ts";
import { fixture, tempDir } from "./helpers.ts";

/** The tools that have a stand-in under test/fixtures/harness. */
export type StubTool = "claude" | "codex" | "gemini" | "opencode";

/** Absolute path of a tool's stand-in. */
export function stub(tool: StubTool): string {
  return fixture(`harness/${tool}`);
}

/** The fake credential the stubs print on stderr for STUB_FAIL (see stub_lib.sh). */
export const FAKE_KEY = "sk-ant-api03-Zq8vY2xW4tR6uP0oN3mL5kJ7hG9fD1sA";

/** A dispatch request for tests: empty options, a signal that never fires unless given. */
export function harnessRequest(
  prompt: string,
  overrides: Partial<DispatchRequest> & { options?: AgentOptions } = {},
): DispatchRequest {
  return { prompt, options: {}, signal: new AbortController().signal, ...overrides };
}

/** A working directory for one call, in which the stubs record their arguments and pids. */
export interface CallDir extends AsyncDisposable {
  path: string;
  /** The stub's command line, as it recorded it. */
  argv(): Promise<string[]>;
  /** Waits until a hanging stub wrote its pid and its child's pid. */
  pids(): Promise<number[]>;
}

/** A temporary call directory with the marker that makes the stubs record themselves. */
export async function callDir(): Promise<CallDir> {
  const dir = await tempDir("svc-harness-");
  await Deno.writeTextFile(`${dir.path}/.stub_record`, "");
  return {
    path: dir.path,
    async argv() {
      return JSON.parse(await Deno.readTextFile(`${dir.path}/stub_argv.json`));
    },
    async pids() {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        try {
          const text = await Deno.readTextFile(`${dir.path}/stub_pids`);
          const pids = text.trim().split(/\s+/).map(Number);
          if (pids.length === 2 && pids.every((pid) => pid > 0)) return pids;
        } catch {
          // Not written yet.
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error("the stub never wrote its pids");
    },
    [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose](),
  };
}

/** The pids among `pids` that are still running (a zombie waiting to be reaped counts as gone). */
export async function running(pids: number[]): Promise<number[]> {
  const script = `for p in "$@"; do
    [ -e /proc/$p/stat ] || continue
    state=$(sed -E 's/^[0-9]+ \\(.*\\) (.).*/\\1/' /proc/$p/stat 2>/dev/null)
    [ -n "$state" ] && [ "$state" != Z ] && echo "$p"
  done; true`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script, "bash", ...pids.map(String)],
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).output();
  return new TextDecoder().decode(output.stdout).split(/\s+/).filter(Boolean).map(Number);
}

/** Asserts that every process of `pids` is gone, allowing the kernel a moment to finish. */
export async function assertAllGone(pids: number[]): Promise<void> {
  const deadline = Date.now() + 3_000;
  let left = await running(pids);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    left = await running(pids);
  }
  assert.deepEqual(left, [], `processes ${left.join(", ")} survived`);
}

/** Kills leftover processes of a failed test, so that one failure does not leak into others. */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}
