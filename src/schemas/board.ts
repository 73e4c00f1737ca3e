import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import { jsonProblem, type JsonValue } from "./json.ts";
import type { Assert, SameType } from "./same_type.ts";

/** What a board write does to a card (section 2 of the specification, "Board write request"). */
export const BOARD_ACTIONS = ["new", "take", "log", "done", "drop", "cancel"] as const;

/** The states of a card: what the transition table (docs/BOARD.md) moves between. */
export const CARD_STATES = ["new", "taken", "done", "dropped", "cancelled"] as const;

/** Longest card title, in characters. */
export const TITLE_LIMIT = 200;
/** Longest description, in characters. */
export const DESC_LIMIT = 20_000;
/** Longest log message, in characters. */
export const MESSAGE_LIMIT = 4_000;
/** Longest `next` (the next step), in characters. */
export const NEXT_LIMIT = 1_000;
/** Longest project, priority or codename, in characters. */
export const NAME_LIMIT = 100;
/** Longest actor label (`by`), in characters: as an owner name. */
export const BY_LIMIT = 128;
/** Most labels on a card. */
export const LABELS_LIMIT = 20;
/** Longest label, in characters. */
export const LABEL_LIMIT = 50;
/** Largest `evidence`, in bytes of its JSON text. */
export const EVIDENCE_BYTES = 8 * 1024;

/** Largest card number: card numbers stay exact integers. */
export const CARD_NUMBER_DIGITS = 15;

/**
 * Characters that must not reach a terminal from a one-line field: C0 controls (tab and newline
 * too), DEL, C1 controls, bidirectional overrides and isolates, line and paragraph separators.
 */
// deno-lint-ignore no-control-regex -- refusing control characters is the point
const ONE_LINE = /^[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]*$/;

/** As {@linkcode ONE_LINE}, but a text may hold newlines and tabs. */
const TEXT =
  // deno-lint-ignore no-control-regex -- refusing control characters is the point
  /^[^\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]*$/;

/** A card number as a string: "1", "2", ... */
const CARD_NUMBER = new RegExp(`^[1-9][0-9]{0,${CARD_NUMBER_DIGITS - 1}}$`);

/** Whether `value` is a card number string ("1", "2", ...): the shape of every `issue_id`. */
export function isCardNumber(value: unknown): value is string {
  return typeof value === "string" && CARD_NUMBER.test(value);
}

function line(max: number, what: string): z.ZodString {
  return z.string().max(max, `must be at most ${max} characters`)
    .regex(ONE_LINE, "must be one line without control characters").describe(what);
}

function text(max: number, what: string): z.ZodString {
  return z.string().max(max, `must be at most ${max} characters`)
    .regex(TEXT, "must hold no control characters but newlines and tabs").describe(what);
}

/** Why `value` is no acceptable `evidence`, or undefined: JSON, bounded in depth and in size. */
function evidenceProblem(value: unknown): string | undefined {
  const problem = jsonProblem(value);
  if (problem !== undefined) return problem;
  const json = JSON.stringify(value);
  // Checked cheaply first: a UTF-8 byte is at most one JavaScript character per 3 bytes.
  if (json.length > EVIDENCE_BYTES || new TextEncoder().encode(json).length > EVIDENCE_BYTES) {
    return `must take at most ${EVIDENCE_BYTES} bytes as JSON`;
  }
  return undefined;
}

/** Any JSON value, nested at most 64 levels and at most {@linkcode EVIDENCE_BYTES} as JSON. */
// `unknown` rather than `custom`, so that the OpenAPI document can describe it (as any JSON).
const EvidenceSchema: z.ZodType<JsonValue> = z.unknown().superRefine((value, ctx) => {
  const problem = evidenceProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
}).describe(`Any JSON value, at most ${EVIDENCE_BYTES} bytes as JSON`) as z.ZodType<JsonValue>;

/** One of {@linkcode BOARD_ACTIONS}. */
export const BoardActionSchema = z.enum(BOARD_ACTIONS);
/** A board action: what a write does to a card. */
export type BoardAction = "new" | "take" | "log" | "done" | "drop" | "cancel";
type _BoardActionMatches = Assert<SameType<BoardAction, z.infer<typeof BoardActionSchema>>>;

/** One of {@linkcode CARD_STATES}. */
export const CardStateSchema = z.enum(CARD_STATES);
/** The state of a card. */
export type CardState = "new" | "taken" | "done" | "dropped" | "cancelled";
type _CardStateMatches = Assert<SameType<CardState, z.infer<typeof CardStateSchema>>>;

/** `dry_run` (default: nothing persisted) or `apply`. */
export const BoardModeSchema = z.enum(["dry_run", "apply"]);
/** A board write's mode: `dry_run` previews, `apply` writes. */
export type BoardMode = "dry_run" | "apply";
type _BoardModeMatches = Assert<SameType<BoardMode, z.infer<typeof BoardModeSchema>>>;

/**
 * The body of a board write (`POST /api/board/write`, `svc board write`, the tool
 * `svc_board_write`), every field of the specification's table. What depends on the action
 * (`title` for `new`, `issue_id` for the others) and `board_dir` (refused as forbidden, before
 * any other check: {@linkcode refuseBoardDir}) are checked by the board service itself.
 */
export const BoardWriteRequestSchema = z.strictObject({
  action: BoardActionSchema.describe("What to do: new, take, log, done, drop or cancel"),
  mode: BoardModeSchema.default("dry_run").describe(
    "dry_run (default) returns what apply would write and persists nothing; apply writes",
  ),
  issue_id: z.string().max(CARD_NUMBER_DIGITS, "must be a card number (1, 2, ...)")
    .regex(/^(|[1-9][0-9]*)$/, "must be a card number (1, 2, ...)")
    .optional()
    .describe("The card: a card number string; empty or absent for new"),
  title: line(TITLE_LIMIT, "Title of the card; required for new")
    .regex(/\S/, "must not be blank").optional(),
  project: line(NAME_LIMIT, "Project of the card; empty clears it").optional(),
  priority: line(NAME_LIMIT, "Priority of the card; empty clears it").optional(),
  desc: text(DESC_LIMIT, "Description of the card; empty clears it").optional(),
  labels: z.array(
    line(LABEL_LIMIT, "A label").min(1, "must not be empty")
      .regex(/^[^,]*$/, "must hold no comma"),
  ).max(LABELS_LIMIT, `must hold at most ${LABELS_LIMIT} labels`).optional()
    .describe("Labels of the card, replacing its labels"),
  message: text(MESSAGE_LIMIT, "What to note in the card's log").optional(),
  next: text(NEXT_LIMIT, "The next step; empty clears it").optional(),
  by: line(BY_LIMIT, "Who acts (a label); the server's default when absent")
    .min(1, "must not be empty").optional(),
  codename: line(NAME_LIMIT, "Codename of the card; empty clears it").optional(),
  evidence: EvidenceSchema.optional(),
  // `unknown` refined, rather than `never`, so that the OpenAPI document can describe it.
  board_dir: (z.unknown().refine((value) => value === undefined, {
    error: "is forbidden: the board directory is fixed by the server",
  }) as z.ZodType<undefined>).optional().describe(
    "Forbidden (403): the board directory is fixed by server configuration",
  ),
});

/**
 * The arguments of the tool protocol's `svc_board_write`: the board write body without
 * `board_dir`, which is always refused and so is not advertised; sent anyway, it is refused as
 * an unknown key.
 */
export const BoardWriteToolSchema = BoardWriteRequestSchema.omit({ board_dir: true });

/** A board write request, as validated (defaults applied). */
export interface BoardWriteRequest {
  /** What to do. */
  action: BoardAction;
  /** `dry_run` (default) or `apply`. */
  mode: BoardMode;
  /** The card number; empty or absent for `new`. */
  issue_id?: string;
  /** The card's title; required for `new`. */
  title?: string;
  /** The project; empty clears it. */
  project?: string;
  /** The priority; empty clears it. */
  priority?: string;
  /** The description; empty clears it. */
  desc?: string;
  /** The labels, replacing the card's. */
  labels?: string[];
  /** Noted in the card's log. */
  message?: string;
  /** The next step; empty clears it. */
  next?: string;
  /** Who acts; the board's default when absent. */
  by?: string;
  /** The codename; empty clears it. */
  codename?: string;
  /** Any JSON value: the card's latest evidence, and noted in its log. */
  evidence?: JsonValue;
  /** Never present: a body holding it is refused as forbidden. */
  board_dir?: undefined;
}
type _BoardWriteRequestMatches = Assert<
  SameType<BoardWriteRequest, z.infer<typeof BoardWriteRequestSchema>>
>;

/**
 * Refuses a body that holds `board_dir` with `forbidden` (HTTP 403): the specification's rule,
 * checked before any other validation of a board write.
 */
export function refuseBoardDir(body: unknown): void {
  if (typeof body === "object" && body !== null && Object.hasOwn(body, "board_dir")) {
    throw new SvcError(
      "forbidden",
      "Cannot write to the board: 'board_dir' is forbidden, the board directory is fixed by the server",
    );
  }
}

/** One entry of a card's log: every applied write adds one. */
export const BoardLogEntrySchema = z.object({
  at: z.string().describe("When (ISO 8601)"),
  by: z.string().describe("Who acted"),
  action: BoardActionSchema,
  message: z.string().optional(),
  next: z.string().optional(),
  evidence: (z.unknown() as z.ZodType<JsonValue>).optional().describe("Any JSON value"),
});
/** One entry of a card's log. */
export interface BoardLogEntry {
  /** When (ISO 8601). */
  at: string;
  /** Who acted. */
  by: string;
  /** What was done. */
  action: BoardAction;
  /** The write's message, when it had one. */
  message?: string;
  /** The write's next step, when it named one. */
  next?: string;
  /** The write's evidence, when it had some. */
  evidence?: JsonValue;
}
type _BoardLogEntryMatches = Assert<SameType<BoardLogEntry, z.infer<typeof BoardLogEntrySchema>>>;

/** A run started for a card: which, when, and by whom (the run's owner). */
export const BoardRunLinkSchema = z.object({
  run_id: z.string(),
  at: z.string(),
  by: z.string(),
});
/** A run started for a card. */
export interface BoardRunLink {
  /** The run (`run_...`). */
  run_id: string;
  /** When it was started (ISO 8601). */
  at: string;
  /** Whose run it is. */
  by: string;
}
type _BoardRunLinkMatches = Assert<SameType<BoardRunLink, z.infer<typeof BoardRunLinkSchema>>>;

/** A board card, as a read or a write returns it. */
export const BoardCardSchema = z.object({
  issue_id: z.string().describe("The card number, as a string"),
  title: z.string(),
  state: CardStateSchema,
  owner: z.string().describe("Whose card it is: the owner that created it"),
  project: z.string().optional(),
  priority: z.string().optional(),
  desc: z.string().optional(),
  labels: z.array(z.string()),
  codename: z.string().optional(),
  next: z.string().optional(),
  evidence: (z.unknown() as z.ZodType<JsonValue>).optional().describe(
    "The latest evidence: any JSON value",
  ),
  created_at: z.string(),
  updated_at: z.string(),
  by: z.string().describe("Who acted last"),
  log: z.array(BoardLogEntrySchema).describe("The newest entries of the card's log, oldest first"),
  log_dropped: z.number().int().describe("How many older log entries are no longer kept"),
  runs: z.array(BoardRunLinkSchema).optional().describe(
    "The runs started for the card (`card_id` of a run request), oldest first: the newest 50",
  ),
});
/** A board card. */
export interface BoardCard {
  /** The card number, as a string ("1", "2", ...). */
  issue_id: string;
  /** The title. */
  title: string;
  /** Where the card stands. */
  state: CardState;
  /** Whose card it is: the owner that created it. */
  owner: string;
  /** The project. */
  project?: string;
  /** The priority. */
  priority?: string;
  /** The description. */
  desc?: string;
  /** The labels. */
  labels: string[];
  /** The codename. */
  codename?: string;
  /** The next step. */
  next?: string;
  /** The latest evidence. */
  evidence?: JsonValue;
  /** When it was created (ISO 8601). */
  created_at: string;
  /** When it was last written (ISO 8601). */
  updated_at: string;
  /** Who acted last. */
  by: string;
  /** The newest entries of its log, oldest first. */
  log: BoardLogEntry[];
  /** How many older log entries are no longer kept. */
  log_dropped: number;
  /** The runs started for the card, oldest first (the newest 50). */
  runs?: BoardRunLink[];
}
type _BoardCardMatches = Assert<SameType<BoardCard, z.infer<typeof BoardCardSchema>>>;

/** One applied write, as the board's change log records it (the board's event stream). */
export const BoardChangeSchema = z.object({
  seq: z.number().int().describe("Position in the board's change log, from 0, without gaps"),
  at: z.string(),
  action: BoardActionSchema,
  issue_id: z.string(),
  owner: z.string(),
  by: z.string(),
  state: CardStateSchema.describe("The card's state after the write"),
});
/** One applied write, in the board's change log. */
export interface BoardChange {
  /** Position in the board's change log: from 0, without gaps, stable across restarts. */
  seq: number;
  /** When (ISO 8601). */
  at: string;
  /** What was done. */
  action: BoardAction;
  /** To which card. */
  issue_id: string;
  /** Whose card it is. */
  owner: string;
  /** Who acted. */
  by: string;
  /** The card's state after the write. */
  state: CardState;
}
type _BoardChangeMatches = Assert<SameType<BoardChange, z.infer<typeof BoardChangeSchema>>>;

/** What a board write returns, in both modes. */
export const BoardWriteResultSchema = z.object({
  mode: BoardModeSchema,
  applied: z.boolean().describe("Whether the write was persisted (mode apply)"),
  action: BoardActionSchema,
  card: BoardCardSchema.describe("The card as it is (apply) or would be (dry_run) after the write"),
  change: BoardChangeSchema.describe("The change recorded (apply) or that would be (dry_run)"),
});
/** What a board write returns, in both modes. */
export interface BoardWriteResult {
  /** The request's mode. */
  mode: BoardMode;
  /** Whether the write was persisted (mode `apply`). */
  applied: boolean;
  /** The request's action. */
  action: BoardAction;
  /** The card as it is (`apply`) or would be (`dry_run`) after the write. */
  card: BoardCard;
  /** The change recorded (`apply`), or that would be (`dry_run`). */
  change: BoardChange;
}
type _BoardWriteResultMatches = Assert<
  SameType<BoardWriteResult, z.infer<typeof BoardWriteResultSchema>>
>;

/** A page of cards, newest first. */
export const BoardListResultSchema = z.object({
  cards: z.array(BoardCardSchema),
  next_cursor: z.string().nullable().describe("Pass as cursor for the next page; null at the end"),
});
/** A page of cards, newest first. */
export interface BoardListResult {
  /** The cards. */
  cards: BoardCard[];
  /** Pass as `cursor` for the next page; null at the end. */
  next_cursor: string | null;
}
type _BoardListResultMatches = Assert<
  SameType<BoardListResult, z.infer<typeof BoardListResultSchema>>
>;
