/**
 * Collaborations: the record of agent-to-agent exchanges, kept in the ledger and listed per
 * owner. The agent-to-agent surface fills it; the dashboard lists what is there.
 * @module
 */
export {
  COLLABORATION_PAGE_LIMIT,
  type CollaborationInput,
  CollaborationLog,
  type CollaborationUpdate,
  PEER_LIMIT,
  SUMMARY_LIMIT,
} from "./collaboration_log.ts";
export type { CollaborationRecord, CollaborationState, Page } from "../ledger/mod.ts";
