import { type FiredSlot, isTerminal, type RunLedger, type TaskLedger } from "../ledger/mod.ts";

/** The run or task an automation's slot started (without why a later slot was skipped). */
export type SlotItem = { run_id: string } | { task_id: string };

/**
 * The run or task an automation's last slot started (or was skipped for), when it is still
 * queued or running; undefined when it ended, or the slot started nothing. The scheduler skips
 * a slot while this is defined, so that each automation has at most one item queued or running:
 * a schedule faster than its work cannot pile work up in the queue.
 */
export async function liveItem(
  ledger: RunLedger & TaskLedger,
  last: FiredSlot | undefined,
): Promise<SlotItem | undefined> {
  const item = last?.item;
  if (item === undefined || "error" in item) return undefined;
  if ("run_id" in item) {
    const run = await ledger.getRun(item.run_id);
    return run && !isTerminal(run.state) ? { run_id: item.run_id } : undefined;
  }
  const task = await ledger.getTask(item.task_id);
  return task && !isTerminal(task.state) ? { task_id: item.task_id } : undefined;
}

/** Why a slot started nothing, naming the earlier item still in the way. */
export function skipReason(item: SlotItem): string {
  const what = "run_id" in item ? `run ${item.run_id}` : `task ${item.task_id}`;
  return `the ${what} of an earlier slot is still queued or running`;
}
