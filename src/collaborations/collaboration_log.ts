import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import {
  type Caller,
  checkCursor,
  type CollaborationLedger,
  type CollaborationRecord,
  type CollaborationState,
  isId,
  mayAccess,
  newId,
  ownerScope,
  type Page,
  shownId,
} from "../ledger/mod.ts";
import { type Assert, describeIssue, type SameType } from "../schemas/mod.ts";

/** Longest `peer` (an agent card URL or a name). */
export const PEER_LIMIT = 2048;
/** Longest `summary`. */
export const SUMMARY_LIMIT = 4096;
/** Most collaborations one page lists. */
export const COLLABORATION_PAGE_LIMIT = 200;

// deno-lint-ignore no-control-regex -- refusing control characters is the point
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;
const STATES = [
  "submitted",
  "working",
  "input-required",
  "auth-required",
  "completed",
  "failed",
  "canceled",
  "rejected",
] as const;

const changeFields = {
  state: z.enum(STATES),
  skill: z.string().min(1).max(256).regex(NO_CONTROL, "must not hold control characters"),
  task_id: z.string().refine((id) => isId("task", id), "must be a task id like task_01abc"),
  run_id: z.string().refine((id) => isId("run", id), "must be a run id like run_01abc"),
  summary: z.string().max(SUMMARY_LIMIT),
};

const recordSchema = z.strictObject({
  direction: z.enum(["inbound", "outbound"]),
  peer: z.string().min(1).max(PEER_LIMIT).regex(NO_CONTROL, "must not hold control characters"),
  state: changeFields.state.default("submitted"),
  skill: changeFields.skill.optional(),
  task_id: changeFields.task_id.optional(),
  run_id: changeFields.run_id.optional(),
  summary: changeFields.summary.optional(),
});

const updateSchema = z.strictObject({
  state: changeFields.state.optional(),
  skill: changeFields.skill.optional(),
  task_id: changeFields.task_id.optional(),
  run_id: changeFields.run_id.optional(),
  summary: changeFields.summary.optional(),
});

/** What {@linkcode CollaborationLog.record} takes: a new exchange (its state `submitted` unless given). */
export interface CollaborationInput {
  /** `inbound`: a peer asked this svc; `outbound`: this svc asked a peer. */
  direction: "inbound" | "outbound";
  /** The other agent: its agent card URL or its name (at most 2048 characters). */
  peer: string;
  /** Where the exchange is. Default `submitted`. */
  state?: CollaborationState;
  /** The skill asked for (at most 256 characters). */
  skill?: string;
  /** The svc task that serves or made the exchange. */
  task_id?: string;
  /** The svc run that serves or made the exchange. */
  run_id?: string;
  /** What was asked and answered, in a few words (at most 4096 characters). */
  summary?: string;
}
type _InputMatches = Assert<SameType<CollaborationInput, z.input<typeof recordSchema>>>;

/** What {@linkcode CollaborationLog.update} takes: the fields that changed. */
export type CollaborationUpdate = Partial<Omit<CollaborationInput, "direction" | "peer">>;
type _UpdateMatches = Assert<SameType<CollaborationUpdate, z.input<typeof updateSchema>>>;

function parsed<T>(schema: z.ZodType<T>, input: unknown, action: string): T {
  const result = schema.safeParse(input);
  if (!result.success) {
    throw new SvcError("invalid_request", `Cannot ${action}: ${describeIssue(result.error)}`);
  }
  return result.data;
}

/**
 * The record of agent-to-agent exchanges (the dashboard's `/api/collaborations`): the
 * agent-to-agent surface records each exchange it serves or makes, as the caller it acts for;
 * callers list and read their own (an administrator everyone's). Every field is bounded and
 * checked before it reaches the ledger.
 */
export class CollaborationLog {
  readonly #ledger: CollaborationLedger;

  /** A log over the ledger's collaboration records. */
  constructor(ledger: CollaborationLedger) {
    this.#ledger = ledger;
  }

  /** Records a new exchange as the caller's; returns it with its id. */
  async record(input: CollaborationInput, caller: Caller): Promise<CollaborationRecord> {
    const fields = parsed(recordSchema, input, "record the collaboration");
    const at = new Date().toISOString();
    const record: CollaborationRecord = {
      collaboration_id: newId("col"),
      owner: caller.owner,
      ...fields,
      started_at: at,
      updated_at: at,
    };
    if (!(await this.#ledger.saveCollaboration(record, { create: true }))) {
      throw new SvcError(
        "internal",
        `Cannot record collaboration ${record.collaboration_id}: the id is taken`,
      );
    }
    return record;
  }

  /** Changes an exchange's state, summary or links; not_found for another owner's. */
  async update(
    id: string,
    changes: CollaborationUpdate,
    caller: Caller,
  ): Promise<CollaborationRecord> {
    const fields = parsed(updateSchema, changes, `update collaboration '${shownId(id)}'`);
    const current = await this.get(id, caller);
    if (!current) {
      throw new SvcError(
        "not_found",
        `Cannot update collaboration '${shownId(id)}': no such collaboration`,
      );
    }
    const record = { ...current, ...fields, updated_at: new Date().toISOString() };
    if (!(await this.#ledger.saveCollaboration(record, { create: false }))) {
      throw new SvcError(
        "conflict",
        `Cannot update collaboration '${shownId(id)}': it changed meanwhile`,
      );
    }
    return record;
  }

  /** An exchange; undefined alike for an unknown id, an id of another shape and another owner's. */
  async get(id: string, caller: Caller): Promise<CollaborationRecord | undefined> {
    if (!isId("col", id)) return undefined;
    const record = await this.#ledger.getCollaboration(id);
    return record && mayAccess(caller, record.owner) ? record : undefined;
  }

  /** The caller's exchanges (everyone's for an administrator), newest first, a page at a time. */
  async list(
    caller: Caller,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<Page<CollaborationRecord>> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > COLLABORATION_PAGE_LIMIT) {
      throw new SvcError(
        "invalid_request",
        `Cannot list collaborations: 'limit' must be a whole number from 1 to ${COLLABORATION_PAGE_LIMIT}`,
      );
    }
    checkCursor("col", options.cursor);
    const owner = ownerScope(caller);
    return await this.#ledger.listCollaborations({
      limit,
      ...(owner !== undefined ? { owner } : {}),
      ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
    });
  }
}
