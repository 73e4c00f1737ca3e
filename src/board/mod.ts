/**
 * The board ledger: cards (`new`, `take`, `log`, `done`, `drop`, `cancel`) with their logs and
 * a change log, in a KV file of the board directory. Every board entry (HTTP, the command line,
 * the tool protocol) calls this service and nothing else.
 * @module
 */
export {
  Board,
  type BoardChangesOptions,
  type BoardListOptions,
  DEFAULT_BY,
  LIST_DEFAULT,
  LIST_LIMIT,
  openBoard,
  type OpenBoardOptions,
} from "./board.ts";
export { CARD_BYTES, FIELDS_BYTES, LOG_LIMIT, RUN_LINKS } from "./card.ts";
export { actionsFrom, TRANSITIONS } from "./transitions.ts";
export type {
  BoardAction,
  BoardCard,
  BoardChange,
  BoardListResult,
  BoardLogEntry,
  BoardMode,
  BoardRunLink,
  BoardWriteRequest,
  BoardWriteResult,
  CardState,
} from "../schemas/mod.ts";
