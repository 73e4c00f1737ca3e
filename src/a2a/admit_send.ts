import type { Caller } from "../services/mod.ts";
import type { Services } from "../services/mod.ts";
import { WORKFLOW_KEY } from "./message_input.ts";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Refuses a peer's send that admission control would refuse (the owner's live and queued
 * runs, or live tasks, at their caps), before the SDK makes a task of it: the peer gets the
 * `rate_limited` JSON-RPC error with its retry time, as an HTTP or MCP caller does, rather than
 * a task that is rejected at once. A send naming a workflow is a run, any other a dispatch.
 */
export async function admitSend(
  services: Services,
  caller: Caller,
  params: unknown,
): Promise<void> {
  const message = isRecord(params) ? params.message : undefined;
  const metadata = isRecord(message) ? message.metadata : undefined;
  if (isRecord(metadata) && WORKFLOW_KEY in metadata) {
    await services.runs.checkAdmission(caller);
  } else {
    await services.tasks.checkAdmission(caller);
  }
}
