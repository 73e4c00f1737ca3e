/**
 * Which program a host runs for an argv, and how Deno resolves it: shared by the launcher and
 * by worker processes (which the npm package starts too, without the launcher).
 * @module
 */
import { checkoutPath } from "./checkout.ts";
import { nodeModulesFlags } from "./node_modules_mode.ts";

/**
 * Deno's unstable features the host uses, as `deno.json`'s `"unstable"` lists them (a test
 * holds the two together): the bundled host runs without the configuration.
 */
export const HOST_UNSTABLE_FLAGS: readonly string[] = [
  "--unstable-kv",
  "--unstable-no-legacy-abort",
];

/**
 * V8's settings for the lean program: its young generation starts at the size V8 grows it to
 * anyway once a process allocates (16 MiB semi-spaces), instead of 1 MiB. A run's start
 * allocates some 15 MB of short-lived objects (the bundle's modules, its schemas, the ledger's
 * first records): from 1 MiB, that took five scavenges (7 ms of pauses, 10 to 14 ms of the
 * whole run with what they promote). The ceiling is V8's own, so a long run holds no more
 * memory than before; the host's peak RSS of a one-call run did not grow (about 70 MB).
 */
export const LEAN_HOST_V8_FLAGS: readonly string[] = ["--v8-flags=--min-semi-space-size=16"];

/** Whether `argv` runs in the lean program: `workflow run`, `resume` or `work`. */
function isLean(argv: readonly string[]): boolean {
  return argv[0] === "workflow" && ["run", "resume", "work"].includes(argv[1] ?? "");
}

/**
 * The host module that runs `argv`: for `workflow run`, `workflow resume` and `workflow work`,
 * the lean program (`cli/workflow_main.ts`: no server, dashboard, MCP or board command) as
 * `deno task build:host` bundles it (`cli/host_bundle/`: a few modules to load instead of some
 * 300, the start of every run); else the whole command line (`cli/main.ts`). Both parse those
 * commands alike.
 */
export function hostEntry(argv: readonly string[]): string {
  return checkoutPath(isLean(argv) ? "cli/host_bundle/workflow_main.js" : "cli/main.ts");
}

/**
 * The `deno run` arguments that name the host module of `argv` and how Deno resolves it. The
 * bundle imports no npm package: it runs with `--no-config`, so that Deno reads no lockfile
 * and checks no `node_modules` install (some 20 ms while `node_modules` is older than
 * `deno.json`). The whole command line resolves its npm packages through `deno.json`
 * (`--node-modules-dir=manual` once they are installed: {@linkcode nodeModulesFlags}).
 */
export async function hostModuleArgs(argv: readonly string[]): Promise<string[]> {
  if (isLean(argv)) {
    return ["--no-config", ...HOST_UNSTABLE_FLAGS, ...LEAN_HOST_V8_FLAGS, hostEntry(argv)];
  }
  return [
    ...(await nodeModulesFlags(checkoutPath(""))),
    "--config",
    checkoutPath("deno.json"),
    hostEntry(argv),
  ];
}
