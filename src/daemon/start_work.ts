import { findWorkflow, MAX_SCRIPT_FILE_BYTES } from "../engine/mod.ts";
import { readCheckedFile } from "../workspace/mod.ts";
import { dirName, platform } from "../platform/mod.ts";
import type { Caller, WorkTrigger } from "../ledger/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import type { Services } from "../services/mod.ts";

/** What an automation slot or a webhook delivery starts: a saved workflow, or a dispatch. */
export type WorkAction =
  | { workflow: string; args?: JsonValue; fake_dispatch?: boolean }
  | { dispatch: Record<string, JsonValue> };

/** The run or task queued. */
export type StartedWork = { run_id: string } | { task_id: string };

/**
 * Queues the work of an action for the caller, marked with its trigger: a saved workflow (found
 * as `svc workflow run <name>` finds it, from the daemon's directory) becomes a queued run, a
 * dispatch a queued task. A worker claims it; nothing runs in the caller's hands.
 */
export async function startWork(
  services: Services,
  action: WorkAction,
  options: { caller: Caller; trigger: WorkTrigger },
): Promise<StartedWork> {
  const { caller, trigger } = options;
  if ("dispatch" in action) {
    const task = await services.tasks.enqueue(action.dispatch, caller, { trigger });
    return { task_id: task.task_id };
  }
  const p = platform();
  const path = await findWorkflow(action.workflow, {
    projectDir: p.cwd(),
    home: services.home,
    userHome: p.homeDir(),
  });
  const run = await services.runs.enqueue(
    {
      // The very file found, from one open handle (a swap since is refused).
      script: await readCheckedFile(path, {
        maxBytes: MAX_SCRIPT_FILE_BYTES,
        shown: `'${action.workflow}.js'`,
      }),
      filename: `${action.workflow}.js`,
      script_dir: dirName(path),
      ...(action.args !== undefined ? { args: action.args } : {}),
      ...(action.fake_dispatch !== undefined ? { fake_dispatch: action.fake_dispatch } : {}),
    },
    caller,
    { trigger, via: "daemon" },
  );
  return { run_id: run.run_id };
}
