/**
 * Which program a host runs for an argv: shared by the launcher and by worker processes (which
 * the npm package starts too, without the launcher).
 * @module
 */
function fileOf(relative: string): string {
  return decodeURIComponent(new URL(relative, import.meta.url).pathname);
}

/**
 * The host module that runs `argv`: the lean program for `workflow run`, `workflow resume` and
 * `workflow work` (`cli/workflow_main.ts`: no server, dashboard, MCP or board command is
 * loaded), else the whole command line (`cli/main.ts`). Both parse those commands alike.
 */
export function hostEntry(argv: readonly string[]): string {
  const lean = argv[0] === "workflow" && ["run", "resume", "work"].includes(argv[1] ?? "");
  return fileOf(lean ? "./workflow_main.ts" : "./main.ts");
}
