/**
 * The benchmark's command line: repetitions, the figure groups, the soak and the fuzz run.
 * @module
 */
import { FUZZ_DEFAULT_SCALE } from "../bench_fuzz.ts";
import { SOAK_DEFAULT_S } from "../bench_soak.ts";
import { DEFAULT_RUNS, type Group, GROUPS, MAX_RUNS } from "./common.ts";

/** What the command line asks for: repetitions, the figure groups, the soak and the fuzz run. */
export interface BenchArgs {
  runs: number;
  only: ReadonlySet<Group>;
  /** The soak's duration, s. */
  soakS: number;
  /** The fuzz battery's scale, and its seed (random when none is given). */
  fuzzScale: number;
  fuzzSeed?: number;
}

export const USAGE = `usage: deno task bench [--runs N] [--only ${GROUPS.join(",")}] ` +
  `[--soak-s S] [--fuzz-scale K] [--fuzz-seed N]`;

/** A whole number from `min` to `max` given to `flag`. */
export function wholeNumber(
  flag: string,
  raw: string | undefined,
  min: number,
  max: number,
): number {
  const value = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw) || value < min || value > max) {
    throw new Error(`${flag} must be a whole number from ${min} to ${max}, got '${raw ?? ""}'`);
  }
  return value;
}

export function parseArgs(args: string[]): BenchArgs {
  let runs = DEFAULT_RUNS;
  let only = new Set<Group>(GROUPS);
  let soakS = SOAK_DEFAULT_S;
  let fuzzScale = FUZZ_DEFAULT_SCALE;
  let fuzzSeed: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const [flag, inline] = arg.includes("=") ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    const raw = inline ?? args[++i];
    if (flag === "--runs") {
      const value = Number(raw);
      if (raw === undefined || !/^\d+$/.test(raw) || value < 1 || value > MAX_RUNS) {
        throw new Error(`--runs must be a whole number from 1 to ${MAX_RUNS}, got '${raw ?? ""}'`);
      }
      runs = value;
    } else if (flag === "--only") {
      const names = (raw ?? "").split(",").map((name) => name.trim()).filter(Boolean);
      const unknown = names.filter((name) => !(GROUPS as readonly string[]).includes(name));
      if (names.length === 0 || unknown.length > 0) {
        throw new Error(`--only takes names among ${GROUPS.join(",")}, got '${raw ?? ""}'`);
      }
      only = new Set(names as Group[]);
    } else if (flag === "--soak-s") {
      // At least 20 s: ten windows of two RSS samples or more.
      soakS = wholeNumber(flag, raw, 20, 86_400);
    } else if (flag === "--fuzz-scale") {
      fuzzScale = wholeNumber(flag, raw, 1, 1000);
    } else if (flag === "--fuzz-seed") {
      fuzzSeed = wholeNumber(flag, raw, 0, 2 ** 31 - 1);
    } else throw new Error(`unknown argument '${arg}' (${USAGE})`);
  }
  return { runs, only, soakS, fuzzScale, ...(fuzzSeed !== undefined ? { fuzzSeed } : {}) };
}
