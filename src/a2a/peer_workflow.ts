/**
 * The file of the workflow a peer's message names: a published workflow of this host (what
 * its agent card lists). By `svc.workflow`, a name looked up as `workflow(name)` looks it up;
 * by `svc.scriptPath`, a path from the host project's root that must lead, at its real path,
 * into one of the project's workflows folders (`.claude/workflows/`, `workflows/`): a peer runs
 * what the host publishes, never any other script file of its project.
 * @module
 */
import { findWorkflow, locateWorkflow, type WorkflowPlaces } from "../engine/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";

function inside(path: string, dir: string): boolean {
  return path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/** The real path of the published workflow `ref` names; an SvcError naming no host path. */
export async function peerWorkflowFile(
  ref: { name: string } | { scriptPath: string },
  places: WorkflowPlaces,
): Promise<string> {
  if ("name" in ref) return await findWorkflow(ref.name, places);
  const located = await locateWorkflow({ scriptPath: ref.scriptPath }, places);
  const p = platform();
  const published = [
    joinPath(places.projectDir, ".claude", "workflows"),
    joinPath(places.projectDir, "workflows"),
  ];
  for (const dir of published) {
    const real = await p.realPath(dir).catch(() => undefined);
    if (real !== undefined && inside(located.real, real)) return located.real;
  }
  throw new SvcError(
    "forbidden",
    `Cannot run '${located.filename}': a peer runs only the workflows this host publishes ` +
      "(its project's .claude/workflows/ and workflows/ folders)",
  );
}
