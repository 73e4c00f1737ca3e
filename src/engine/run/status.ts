import { newId, type RunStatus } from "../../ledger/mod.ts";
import type { WorkflowRunRequest } from "../../schemas/mod.ts";
import { now } from "../run_context.ts";

/** What {@linkcode newRunStatus} needs beyond the checked request. */
export interface NewRunStatusOptions {
  /** The checked request: isolation, sandbox levels, workdir, fake dispatch, timeout, resume. */
  request: WorkflowRunRequest;
  /** Whose run it is. */
  owner: string;
  /** The script's meta, already bounded for the record. */
  meta: RunStatus["meta"];
  /** The script's file name. */
  filename: string;
  /** The run's own limits, defaults applied. */
  limits: RunStatus["limits"];
  /** The budget's figures before anything was spent. */
  budget: RunStatus["budget"];
  /** Whether the fake is the only provider for a run not under fake dispatch. */
  fakeProviderOnly: boolean;
  /** The run's id. Default: a new one. */
  runId?: string;
  /** When the run was recorded. Default: now. */
  createdAt?: string;
}

/**
 * The first status of a run (`queued`, nothing spent, nothing narrated): written in one place,
 * so that the engine and test fixtures build every field the same way.
 */
export function newRunStatus(options: NewRunStatusOptions): RunStatus {
  const { request, meta } = options;
  return {
    run_id: options.runId ?? newId("run"),
    state: "queued",
    owner: options.owner,
    name: meta.name ?? null,
    meta,
    filename: options.filename,
    ...(request.title !== undefined ? { title: request.title } : {}),
    ...(request.description !== undefined ? { description: request.description } : {}),
    isolation: request.isolation,
    sandbox_default: request.sandbox_default,
    sandbox_max: request.sandbox_max ?? request.sandbox_default,
    workdir: request.workdir ?? null,
    fake_dispatch: request.fake_dispatch,
    timeout: request.timeout,
    resumed_from: request.resume_from ?? null,
    ...(request.card_id !== undefined ? { card_id: request.card_id } : {}),
    created_at: options.createdAt ?? now(),
    started_at: null,
    ended_at: null,
    narration: [],
    narration_dropped: 0,
    conditions: [],
    conditions_dropped: 0,
    security_events: [],
    security_events_dropped: 0,
    script_errors: [],
    script_errors_dropped: 0,
    failures: {},
    fake_provider_only: options.fakeProviderOnly,
    limits: options.limits,
    budget: options.budget,
    calls: { total: 0, queued: 0, running: 0, succeeded: 0, failed: 0, replayed: 0, skipped: 0 },
    journal: {
      calls: 0,
      replayed: 0,
      live: 0,
      failed: 0,
      skipped: 0,
      omitted: 0,
      usage: { input_tokens: 0, output_tokens: 0, cost_usd: 0 },
    },
  };
}
