/**
 * The longer fuzz run of `deno task bench` (group `fuzz`): the fuzz battery
 * (`test/fuzz_entries_test.ts`) at `SVC_FUZZ_SCALE` times its CI size, with a random seed that
 * is printed before it starts, so that a failure can be replayed with
 * `SVC_FUZZ_SEED=<seed> SVC_FUZZ_SCALE=<scale> deno test -A test/fuzz_entries_test.ts`.
 * Reports the requests fuzzed per server, the time, and the tests that failed.
 * @module
 */

/** The default scale: ten times the CI battery (about 100,000 requests). */
export const FUZZ_DEFAULT_SCALE = 10;

/** What the longer fuzz run measured. */
export interface FuzzFigures {
  seed: number;
  scale: number;
  /** Requests (tool calls for the tool protocol) per server, as the battery counts them. */
  requests: Record<string, number>;
  total: number;
  seconds: number;
  passed: number;
  failed: number;
  /** The battery's output when a test failed (its seed and shrunk request are in it). */
  failure?: string;
}

/** A random 31-bit seed: fast-check takes any integer. */
export function randomSeed(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]! >>> 1;
}

/** Runs the battery at `scale` with `seed` in a `deno test` of its own. */
export async function measureFuzz(
  repoRoot: string,
  options: { scale: number; seed: number },
): Promise<FuzzFigures> {
  const { scale, seed } = options;
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      // As the `test` task: the checkout leaves node_modules to each command (deno.json).
      "--node-modules-dir=auto",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      "--allow-net=127.0.0.1",
      "--allow-sys=uid,homedir",
      "test/fuzz_entries_test.ts",
    ],
    cwd: repoRoot,
    env: {
      SVC_FUZZ_SEED: String(seed),
      SVC_FUZZ_SCALE: String(scale),
      NO_COLOR: "1",
      DENO_NO_UPDATE_CHECK: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - started) / 1000;
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  const requests: Record<string, number> = {};
  for (
    const match of text.matchAll(/^(dashboard|a2a|mcp|daemon): (\d+) (?:requests|tool calls)/gm)
  ) {
    requests[match[1]!] = Number(match[2]);
  }
  const summary = /(\d+) passed \| (\d+) failed/.exec(text);
  const passed = Number(summary?.[1] ?? 0);
  const failed = summary ? Number(summary[2]) : 1;
  return {
    seed,
    scale,
    requests,
    total: Object.values(requests).reduce((a, b) => a + b, 0),
    seconds,
    passed,
    failed,
    ...(failed > 0 || !output.success ? { failure: text.slice(-20_000) } : {}),
  };
}
