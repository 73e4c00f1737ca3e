/**
 * The ledger's index of review runs: which runs are reviews (runs of the bundled review
 * workflow started by the review service), and over what. A run whose script merely calls
 * itself `svc-review` is not in it. Functions over the KV store that the KV ledger delegates to;
 * keys, newest first (see `pages.ts`):
 *
 * | key | value |
 * |---|---|
 * | `["reviews", newestFirstKey(run_id)]` | the review record |
 * | `["reviews_by_owner", owner, newestFirstKey(run_id)]` | `{}`: index for listing |
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import type { KvKey, KvStore } from "../platform/mod.ts";
import { fitRecord } from "./fit.ts";
import { fromBytes } from "./json_bytes.ts";
import { listNewestFirst, newestFirstKey, type Page, type PageOptions } from "./pages.ts";

/** What a review run reviewed: recorded when the review service starts it. */
export interface ReviewRecord {
  /** The run (`run_...`). */
  run_id: string;
  /** Whose review it is (the run's owner). */
  owner: string;
  /** The repository's working directory, as given. */
  workdir: string;
  /** The git ref the changes were taken against, as given. */
  base: string;
  /** The commit `base` named when the review started. */
  commit: string;
  /** Changed files sent to review. */
  files: number;
  /** Changed files left out (over the file limit). */
  skipped_files: number;
  /** Whether some file's patch was clipped to the per-file or total limit. */
  truncated: boolean;
  /** When the review started (ISO 8601). */
  created_at: string;
}

const TABLE: KvKey = ["reviews"];
const BY_OWNER: KvKey = ["reviews_by_owner"];

/** Records a review run; its run id must be new to the index. */
export async function saveReview(kv: KvStore, record: ReviewRecord): Promise<void> {
  const key = newestFirstKey(record.run_id);
  const result = await kv.atomic()
    .check([...TABLE, key], null)
    .set([...TABLE, key], fitRecord(record).bytes)
    .set([...BY_OWNER, record.owner, key], fitRecord({}).bytes)
    .commit();
  if (!result.ok) {
    throw new SvcError("internal", `Cannot record review ${record.run_id}: it is recorded already`);
  }
}

/** The review record of a run, or undefined when the run is no review. */
export async function getReview(kv: KvStore, runId: string): Promise<ReviewRecord | undefined> {
  const entry = await kv.get([...TABLE, newestFirstKey(runId)]);
  return entry.value ? fromBytes<ReviewRecord>(entry.value) : undefined;
}

/** Review records, newest first, a page at a time; only `owner`'s when given. */
export function listReviews(kv: KvStore, options: PageOptions): Promise<Page<ReviewRecord>> {
  return listNewestFirst<ReviewRecord>(kv, {
    table: TABLE,
    byOwner: BY_OWNER,
    idOf: (record) => record.run_id,
  }, options);
}
