import * as z from "zod";
import type { RunManager } from "../engine/mod.ts";
import { SvcError } from "../errors/mod.ts";
import {
  type Caller,
  checkCursor,
  isId,
  type LedgerCore,
  mayAccess,
  ownerScope,
  type Page,
  type ReviewLedger,
  type ReviewRecord,
  type RunError,
  type RunState,
  type RunStatus,
} from "../ledger/mod.ts";
import { type Assert, describeIssue, type JsonValue, type SameType } from "../schemas/mod.ts";
import { WorkspacePolicy } from "../workspace/mod.ts";
import { diffWorkdir } from "./git_diff.ts";
import { readReviewScript, REVIEW_FILENAME } from "./review_script.ts";

/** Most reviews one page lists. */
export const REVIEW_PAGE_LIMIT = 100;

// deno-lint-ignore no-control-regex -- refusing control characters is the point
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;

/** The request of {@linkcode ReviewService.start}. */
export const ReviewStartRequestSchema = z.strictObject({
  workdir: z.string().min(1).max(4096).regex(NO_CONTROL, "must not hold control characters"),
  base: z.string().default("HEAD"),
  fake_dispatch: z.boolean().default(false),
  budget_usd: z.number().positive().optional(),
  budget_tokens: z.number().int("must be a whole number of tokens").positive().optional(),
  timeout: z.number().int("must be whole seconds").positive().max(7 * 24 * 3600).optional(),
});

/** What {@linkcode ReviewService.start} takes. */
export interface ReviewStartRequest {
  /** A directory of a git repository: its changes (under it) are reviewed. */
  workdir: string;
  /** The git ref the changes are taken against. Default `HEAD` (the uncommitted changes). */
  base?: string;
  /** Answer every agent with the fake provider. */
  fake_dispatch?: boolean;
  /** The run's budget in USD. */
  budget_usd?: number;
  /** The run's budget in tokens. */
  budget_tokens?: number;
  /** Seconds the review may take (the run's timeout). */
  timeout?: number;
}

type _RequestMatches = Assert<
  SameType<ReviewStartRequest, z.input<typeof ReviewStartRequestSchema>>
>;

/** One thing a reviewing agent found. */
export interface Finding {
  /** The file, relative to the reviewed directory. */
  path: string;
  /** The line of the new file it is about, when there is one. */
  line?: number;
  /** How serious it is. */
  severity: "info" | "warning" | "error";
  /** What is wrong, in a sentence or two. */
  message: string;
}

/** A review in a listing: what it reviewed and where its run is. */
export interface ReviewSummary extends ReviewRecord {
  /** The run's state. */
  state: RunState;
  /** When the run ended, once it did. */
  ended_at: string | null;
  /** Findings of a succeeded review; null until (unless) it succeeds. */
  findings: number | null;
  /** Why the run did not succeed. */
  error?: RunError;
}

/** A review in full: its run, what it reviewed and its findings. */
export interface ReviewDetail {
  /** The review's run. */
  run: RunStatus;
  /** What it reviewed. */
  review: ReviewRecord;
  /** The findings of a succeeded review; null until (unless) it succeeds. */
  findings: Finding[] | null;
}

/** Options of {@linkcode ReviewService}. */
export interface ReviewServiceOptions {
  /** Starts and reads the review runs. */
  runs: RunManager;
  /** Keeps which runs are reviews. */
  ledger: ReviewLedger & LedgerCore;
  /** The review workflow. Default: the bundled `bundled/svc-review.js`. */
  scriptPath?: string;
  /**
   * Which repositories remote callers may review. Default: no roots, so a remote caller can
   * review none; the command line's choice is free either way.
   */
  workspace?: WorkspacePolicy;
}

const SEVERITIES = new Set(["info", "warning", "error"]);

/** The well-formed findings of a review run's result; null for a result of another shape. */
function findingsOf(result: JsonValue | undefined): Finding[] | null {
  if (result === null || typeof result !== "object" || Array.isArray(result)) return null;
  const list = result.findings;
  if (!Array.isArray(list)) return null;
  const out: Finding[] = [];
  for (const item of list) {
    if (item === null || typeof item !== "object" || Array.isArray(item)) continue;
    const { path, line, severity, message } = item;
    if (typeof path !== "string" || typeof message !== "string") continue;
    if (typeof severity !== "string" || !SEVERITIES.has(severity)) continue;
    out.push({
      path,
      ...(typeof line === "number" && Number.isInteger(line) && line > 0 ? { line } : {}),
      severity: severity as Finding["severity"],
      message,
    });
  }
  return out;
}

/**
 * Reviews: a review is a workflow run of the bundled review workflow (`svc-review`) over the
 * git diff of a working directory, one agent per changed file, its findings in the run's
 * result. The ledger's review index says which runs are reviews, so a script that calls itself
 * `svc-review` is not one; another owner's review, or a run that is no review, is not found.
 */
export class ReviewService {
  readonly #runs: RunManager;
  readonly #ledger: ReviewLedger & LedgerCore;
  readonly #scriptPath: string | undefined;
  readonly #workspace: WorkspacePolicy;

  /** A review service over the run manager and ledger of the options. */
  constructor(options: ReviewServiceOptions) {
    this.#runs = options.runs;
    this.#ledger = options.ledger;
    this.#scriptPath = options.scriptPath;
    this.#workspace = options.workspace ?? new WorkspacePolicy({
      forbidden: [options.ledger.home],
      home: options.ledger.home,
    });
  }

  /**
   * Computes the diff of `workdir` against `base` and starts the review run over it; returns
   * the run's first status. A directory outside a git repository, a base that is no plain
   * revision or names no commit: `invalid_argument`, before any run starts.
   */
  async start(request: ReviewStartRequest, caller: Caller): Promise<RunStatus> {
    const parsed = ReviewStartRequestSchema.safeParse(request);
    if (!parsed.success) {
      throw new SvcError(
        "invalid_request",
        `Cannot start the review: ${describeIssue(parsed.error)}`,
      );
    }
    const { workdir: asked, base, ...run } = parsed.data;
    // Before git runs: git reads the repository's own configuration, and the diff is copied
    // into the caller's run.
    const workdir = await this.#workspace.workdirFor(caller, asked, { what: "workdir" }) ?? asked;
    const diff = await diffWorkdir(workdir, base);
    const script = await readReviewScript(this.#scriptPath);
    const status = await this.#runs.start(
      {
        script,
        filename: REVIEW_FILENAME,
        workdir: diff.workdir,
        args: { base, commit: diff.commit, diff_files: diff.files as unknown as JsonValue },
        ...run,
      },
      caller,
      { via: "review" },
    );
    try {
      await this.#ledger.saveReview({
        run_id: status.run_id,
        owner: status.owner,
        workdir: diff.workdir,
        base,
        commit: diff.commit,
        files: diff.files.length,
        skipped_files: diff.skipped_files,
        truncated: diff.truncated,
        created_at: status.created_at,
      });
    } catch (error) {
      // A review that cannot be found as one must not run on unseen.
      await this.#runs.cancel(status.run_id, caller).catch(() => {});
      throw error;
    }
    return status;
  }

  /** The caller's reviews (everyone's for an administrator), newest first, a page at a time. */
  async list(
    caller: Caller,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<Page<ReviewSummary>> {
    const limit = options.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > REVIEW_PAGE_LIMIT) {
      throw new SvcError(
        "invalid_request",
        `Cannot list reviews: 'limit' must be a whole number from 1 to ${REVIEW_PAGE_LIMIT}`,
      );
    }
    checkCursor("run", options.cursor);
    const owner = ownerScope(caller);
    const page = await this.#ledger.listReviews({
      limit,
      ...(owner !== undefined ? { owner } : {}),
      ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
    });
    const items: ReviewSummary[] = [];
    for (const review of page.items) {
      const run = await this.#runs.get(review.run_id, caller);
      if (!run) continue;
      const findings = run.state === "succeeded" ? findingsOf(run.result) : null;
      items.push({
        ...review,
        state: run.state,
        ended_at: run.ended_at,
        findings: findings === null ? null : findings.length,
        ...(run.error !== undefined ? { error: run.error } : {}),
      });
    }
    return { items, next_cursor: page.next_cursor };
  }

  /**
   * A review with its run and, once it succeeded, its findings. Undefined alike for an unknown
   * id, another owner's review and a run that is no review.
   */
  async get(runId: string, caller: Caller): Promise<ReviewDetail | undefined> {
    if (!isId("run", runId)) return undefined;
    const review = await this.#ledger.getReview(runId);
    if (!review || !mayAccess(caller, review.owner)) return undefined;
    const run = await this.#runs.get(runId, caller);
    if (!run) return undefined;
    return { run, review, findings: run.state === "succeeded" ? findingsOf(run.result) : null };
  }
}
