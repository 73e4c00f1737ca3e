/**
 * Reviews: workflow runs of the bundled review workflow over the git diff of a working
 * directory, one agent per changed file, listed with their findings.
 * @module
 */
export { checkRef, DIFF_LIMITS, type DiffFile, REF_LIMIT } from "./git_diff.ts";
export { defaultReviewScriptPath, REVIEW_FILENAME, REVIEW_WORKFLOW_NAME } from "./review_script.ts";
export {
  type Finding,
  REVIEW_PAGE_LIMIT,
  type ReviewDetail,
  ReviewService,
  type ReviewServiceOptions,
  type ReviewStartRequest,
  ReviewStartRequestSchema,
  type ReviewSummary,
} from "./review_service.ts";
export type { ReviewRecord } from "../ledger/mod.ts";
