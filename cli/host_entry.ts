/**
 * Which program a host runs for an argv: shared by the launcher and by worker processes (which
 * the npm package starts too, without the launcher).
 * @module
 */
import { checkoutPath } from "./checkout.ts";

/**
 * The host module that runs `argv`: for `workflow run`, `workflow resume` and `workflow work`,
 * the lean program (`cli/workflow_main.ts`: no server, dashboard, MCP or board command) as
 * `deno task build:host` bundles it (`cli/host_bundle/`: one module to load instead of some
 * 300, the start of every run); else the whole command line (`cli/main.ts`). Both parse those
 * commands alike.
 */
export function hostEntry(argv: readonly string[]): string {
  const lean = argv[0] === "workflow" && ["run", "resume", "work"].includes(argv[1] ?? "");
  return checkoutPath(lean ? "cli/host_bundle/workflow_main.js" : "cli/main.ts");
}
