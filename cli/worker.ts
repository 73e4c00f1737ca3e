/**
 * Worker processes: `svc task work <id>` and `svc workflow work <id>` started in a session of
 * their own, so that a queued task or run goes on after the process that asked for it has
 * gone (`svc dispatch` without `--wait`; `svc mcp`, whose client may hang up at any time).
 * @module
 */
import { platform } from "../src/platform/mod.ts";
import { hostModuleArgs } from "./host_entry.ts";
import { configuredGrants, hostPermissionFlags } from "./permissions.ts";
import { UsageError } from "./workflow_input.ts";

/** The queued work a worker claims: a dispatch task or a workflow run. */
export type WorkKind = "task" | "run";

/** The arguments of `svc` that work on `id` (hidden commands). */
function workArgs(kind: WorkKind, id: string): string[] {
  return kind === "task" ? ["task", "work", id] : ["workflow", "work", id];
}

/**
 * The command line that runs `svc <argv>` in a process of its own: the platform's own program
 * when it knows it (Node, a compiled binary), else `deno run` with the host's grants, as the
 * launcher would start it.
 */
export async function workerCommand(
  kind: WorkKind,
  id: string,
): Promise<{ command: string; args: string[] }> {
  const p = platform();
  const argv = workArgs(kind, id);
  const self = p.selfCommand();
  if (self) return { command: self.command, args: [...self.args, ...argv] };
  const deno = p.denoExecutable();
  if (!deno) {
    throw new UsageError(`Cannot start a ${kind} worker: no Deno binary is known (set SVC_DENO)`);
  }
  return {
    command: deno,
    args: [
      "run",
      ...hostPermissionFlags(await configuredGrants()),
      ...(await hostModuleArgs(argv)),
      ...argv,
    ],
  };
}

/**
 * Starts a worker for the queued task or run `id` in a session of its own, with no standard
 * streams, in this process's directory (a run's project folder is where it was asked for).
 * While this process lives the worker is its descendant, so the launcher's lifeline still
 * takes it down with the host; once this process has ended, it runs on alone.
 */
export async function spawnWorker(kind: WorkKind, id: string): Promise<void> {
  const worker = await workerCommand(kind, id);
  platform().spawnDetached(worker.command, { args: worker.args });
}
