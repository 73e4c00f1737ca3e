import { SvcError } from "../errors/mod.ts";
import type { BoardCard, BoardLogEntry, BoardRunLink, BoardWriteRequest } from "../schemas/mod.ts";
import { transition } from "./transitions.ts";

/** Most log entries a card keeps; older ones are dropped and counted in `log_dropped`. */
export const LOG_LIMIT = 100;

/**
 * Largest card, in bytes of its stored JSON: a Deno KV value takes at most 64 KiB. Older log
 * entries are dropped (and counted) to stay inside it.
 */
export const CARD_BYTES = 63 * 1024;

/**
 * Largest card without its log, in bytes of JSON. With the request limits, the newest log entry
 * (at most about 24 KiB) always fits beside it inside {@linkcode CARD_BYTES}.
 */
export const FIELDS_BYTES = 36 * 1024;

const encoder = new TextEncoder();

function byteLength(value: unknown): number {
  return encoder.encode(JSON.stringify(value)).length;
}

/** Most runs a card lists; older links are dropped (the card's log still names them). */
export const RUN_LINKS = 50;

/**
 * The card after run `link.run_id` started for it: the link joins `runs` (the newest
 * {@linkcode RUN_LINKS}), and the log gains an entry naming the run. Pure, like
 * {@linkcode applyAction}; the card's state does not change.
 */
export function linkRun(current: BoardCard, link: BoardRunLink): BoardCard {
  const runs = [...(current.runs ?? []).filter((r) => r.run_id !== link.run_id), link];
  const entry: BoardLogEntry = {
    at: link.at,
    by: link.by,
    action: "log",
    message: `run ${link.run_id} started for this card`,
  };
  return fitCard({
    ...current,
    labels: [...current.labels],
    runs: runs.slice(-RUN_LINKS),
    log: [...current.log, entry],
    updated_at: link.at,
    by: link.by,
  });
}

/** Who writes, and when: the same for a dry run and the apply it previews. */
export interface WriteContext {
  /** The card number, as a string. */
  issueId: string;
  /** The owner of a new card (the caller's); an existing card keeps its own. */
  owner: string;
  /** The actor label recorded. */
  by: string;
  /** The time recorded (ISO 8601). */
  at: string;
}

/** Optional text fields that an empty string clears. */
const CLEARABLE = ["project", "priority", "desc", "codename", "next"] as const;

/**
 * The card after `request`: `current` changed (or a new card when undefined), with one log
 * entry added and the log fitted into {@linkcode CARD_BYTES}. Pure: a dry run and the apply it
 * previews compute the same card from the same inputs. Throws `conflict` for a transition the
 * table refuses and `invalid_request` for a card too large.
 */
export function applyAction(
  current: BoardCard | undefined,
  request: BoardWriteRequest,
  context: WriteContext,
): BoardCard {
  const { issueId, by, at } = context;
  const state = current === undefined || request.action === "new"
    ? "new"
    : transition(request.action, current.state, issueId);
  const card: BoardCard = current
    ? { ...current, labels: [...current.labels], log: [...current.log] }
    : {
      issue_id: issueId,
      title: request.title ?? "",
      state: "new",
      owner: context.owner,
      labels: [],
      created_at: at,
      updated_at: at,
      by,
      log: [],
      log_dropped: 0,
    };
  if (request.title !== undefined) card.title = request.title;
  for (const field of CLEARABLE) {
    const value = request[field];
    if (value === undefined) continue;
    if (value === "") delete card[field];
    else card[field] = value;
  }
  if (request.labels !== undefined) card.labels = [...new Set(request.labels)];
  if (request.evidence !== undefined) card.evidence = request.evidence;
  card.state = state;
  card.updated_at = at;
  card.by = by;
  const entry: BoardLogEntry = { at, by, action: request.action };
  if (request.message !== undefined && request.message !== "") entry.message = request.message;
  if (request.next !== undefined && request.next !== "") entry.next = request.next;
  if (request.evidence !== undefined) entry.evidence = request.evidence;
  card.log.push(entry);
  return fitCard(card);
}

/**
 * Keeps the newest {@linkcode LOG_LIMIT} log entries, and fewer when the card would take more
 * than {@linkcode CARD_BYTES}; `log_dropped` counts what went. A card whose fields alone take
 * more than {@linkcode FIELDS_BYTES} is refused.
 */
function fitCard(card: BoardCard): BoardCard {
  const fields = byteLength({ ...card, log: [] });
  if (fields > FIELDS_BYTES) {
    throw new SvcError(
      "invalid_request",
      `Cannot write card ${card.issue_id}: its fields would take ${fields} bytes of JSON, over ${FIELDS_BYTES}`,
    );
  }
  let log = card.log;
  let dropped = card.log_dropped;
  if (log.length > LOG_LIMIT) {
    dropped += log.length - LOG_LIMIT;
    log = log.slice(-LOG_LIMIT);
  }
  // Entry sizes plus their commas, and room for `log_dropped` to gain digits.
  const sizes = log.map((entry) => byteLength(entry) + 1);
  let total = fields + sizes.reduce((sum, size) => sum + size, 0) + 16;
  let first = 0;
  while (total > CARD_BYTES && first < log.length - 1) total -= sizes[first++]!;
  if (total > CARD_BYTES) {
    throw new SvcError(
      "invalid_request",
      `Cannot write card ${card.issue_id}: it would take ${total} bytes of JSON, over ${CARD_BYTES}`,
    );
  }
  return ordered({ ...card, log: log.slice(first), log_dropped: dropped + first });
}

/** The card with its fields in one order, whichever write set them last: stable output. */
function ordered(card: BoardCard): BoardCard {
  const out: BoardCard = {
    issue_id: card.issue_id,
    title: card.title,
    state: card.state,
    owner: card.owner,
    labels: card.labels,
    created_at: card.created_at,
    updated_at: card.updated_at,
    by: card.by,
    log: card.log,
    log_dropped: card.log_dropped,
  };
  for (const field of ["project", "priority", "desc", "codename", "next"] as const) {
    const value = card[field];
    if (value !== undefined) out[field] = value;
  }
  if (card.evidence !== undefined) out.evidence = card.evidence;
  if (card.runs !== undefined) out.runs = card.runs;
  return out;
}
