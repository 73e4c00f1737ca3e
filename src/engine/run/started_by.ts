/**
 * What started a run, in words, as the run page, the run list, `svc workflow status` and the
 * API show it: composed once, when the run is recorded, from the surface that asked and what the
 * run already says (the automation or webhook that triggered it, the run it resumes, its card).
 * Only ids and operator-configured names go into it, clipped: never a secret, never a prompt.
 * @module
 */
import type { RunStatus, StartedBy, StartSurface } from "../../ledger/mod.ts";

/** Longest `started_by.text`, in characters. */
export const STARTED_BY_CHARS = 200;

const SURFACES: Record<StartSurface, string> = {
  cli: "the command line",
  api: "the HTTP API",
  mcp: "a tool-protocol (MCP) client",
  a2a: "an agent-to-agent (A2A) client",
  daemon: "the daemon",
  review: "a review",
  host: "this host",
};

/** What started the run of `status`, asked for through `via`. */
export function startedBy(
  via: StartSurface,
  status: Pick<RunStatus, "trigger" | "resumed_from" | "card_id">,
): StartedBy {
  const { trigger } = status;
  let text = trigger?.kind === "automation"
    ? `automation ${trigger.automation_id}`
    : trigger?.kind === "webhook"
    ? `webhook ${trigger.hook}`
    : SURFACES[via];
  if (status.resumed_from) text = `resume of ${status.resumed_from} via ${text}`;
  if (status.card_id !== undefined) text = `${text} for card ${status.card_id}`;
  const clipped = text.length > STARTED_BY_CHARS ? `${text.slice(0, STARTED_BY_CHARS - 1)}…` : text;
  return { via, text: clipped };
}
