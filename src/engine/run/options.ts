import { type Dispatcher } from "../../dispatch/mod.ts";
import { SessionStore } from "../../tasks/mod.ts";
import { defaultIsolationBackends, type IsolationBackends } from "../../isolation/mod.ts";
import type {
  ApprovalLedger,
  FeedLedger,
  HostLease,
  HostLedger,
  LedgerCore,
  QueueLedger,
  RunLedger,
  SessionLedger,
} from "../../ledger/mod.ts";
import { withDefaults } from "../../options/mod.ts";
import { platform } from "../../platform/mod.ts";
import { WorkspacePolicy } from "../../workspace/mod.ts";
import type { RunAdmissionLimits } from "../admission.ts";
import { DEFAULT_GUEST_HEAP_MB } from "./guest_prime.ts";

/**
 * The ledger domains a run manager uses: runs and their feeds, the queue, hosts and their
 * recovery, approvals asked by calls, and sessions (its default session store).
 */
export type RunManagerLedger =
  & LedgerCore
  & RunLedger
  & FeedLedger
  & HostLedger
  & QueueLedger
  & ApprovalLedger
  & SessionLedger;

/** Options of {@linkcode RunManager.create}. */
export interface RunManagerOptions {
  /** Where the runs' `agent()` calls go. */
  dispatcher: Dispatcher;
  /** Where runs, journals and event feeds are kept. */
  ledger: RunManagerLedger;
  /** Where `agent(..., {session})` conversations live. Default: a store over `ledger`. */
  sessions?: SessionStore;
  /** The project: its `schemas/` and `workflows/` folders come before those of `SVC_HOME`. Default: the current directory. */
  projectDir?: string;
  /** The user's home, whose `.claude/agents/` and `.claude/workflows/` come after the project's. Default: `HOME`. */
  userHome?: string;
  /** The backends scripts run in, by isolation tier. Default: unsafe-local and microvm. */
  isolation?: IsolationBackends;
  /** Simultaneous `agent()` calls of one run; more queue. Default 8. */
  concurrency?: number;
  /** `agent()` calls one run may make; later ones return null. Default 200. */
  maxAgents?: number;
  /**
   * Refused `agent()` calls after which a run fails with `agent_limit_exceeded` (a script
   * looping over refused calls). Default 1000.
   */
  maxRefusedCalls?: number;
  /** V8 heap cap of each guest in MiB. Default 512. */
  heapMb?: number;
  /** Largest frame a guest may send, in bytes. Default 4 MiB. */
  frameLimit?: number;
  /** Most narration entries kept per run; later ones are counted, not kept. Default 5000. */
  maxNarration?: number;
  /** Bytes of narration text kept per run; later entries are counted, not kept. Default 2 MiB. */
  maxNarrationBytes?: number;
  /** Most security events kept per run. Default 200. */
  maxSecurityEvents?: number;
  /**
   * Bytes of live output (progress items as JSON) recorded per call; past it one `truncated`
   * item. Default 64 KiB (the configuration's `progress.call_bytes`).
   */
  maxProgressBytes?: number;
  /**
   * Bytes of journal one run may record (entries and the results kept inline in them).
   * A call whose result would pass it fails with `LedgerLimitExceeded`. Default 16 MiB.
   */
  maxJournalBytes?: number;
  /** Bytes of results over 48 KiB (kept in blob files) one run may record. Default 64 MiB. */
  maxBlobBytes?: number;
  /** Source of bridge nonces (tests pass a known one to prove it never leaks). */
  nonce?: () => string;
  /**
   * Which directories remote callers may name as `workdir`. Default: no roots,
   * so a remote caller's run gets a fresh scratch workdir and cannot name one; the command
   * line's choice is free either way.
   */
  workspace?: WorkspacePolicy;
  /** This process's identity in the ledger, shared with its task manager. Default: its own. */
  host?: HostLease;
  /**
   * How often the runs of this host look for a cancel asked for by another process, and a call
   * waiting for approval for its decision, in ms. Default 250.
   */
  cancelPollMs?: number;
  /**
   * Keep one `unsafe-local` guest started ahead of the next run, so that a run in a long-lived
   * host (dashboard, daemon) pays no process boot before its first call. Each run still gets a
   * fresh process. Default false: a one-shot command would start a guest it never uses.
   */
  prestartGuest?: boolean;
  /** Admission control: the host's and remote owners' caps. Default: `DEFAULT_RUN_ADMISSION`. */
  admission?: Partial<RunAdmissionLimits>;
}

/**
 * {@linkcode RunManagerOptions} with every default applied, except the host lease and the
 * admission caps, which the manager turns into objects of their own.
 */
export type ResolvedRunOptions =
  & Required<
    Omit<
      RunManagerOptions,
      | "nonce"
      | "projectDir"
      | "sessions"
      | "userHome"
      | "host"
      | "workspace"
      | "admission"
    >
  >
  & {
    sessions: SessionStore;
    workspace: WorkspacePolicy;
    nonce?: () => string;
    projectDir: string;
    userHome?: string;
  };

/** The manager's options with their defaults, read once when it is made. */
export function resolveRunOptions(options: RunManagerOptions): ResolvedRunOptions {
  return {
    ...withDefaults({
      isolation: defaultIsolationBackends(),
      concurrency: 8,
      maxAgents: 200,
      maxRefusedCalls: 1000,
      heapMb: DEFAULT_GUEST_HEAP_MB,
      frameLimit: 4 * 1024 * 1024,
      maxNarration: 5000,
      maxNarrationBytes: 2 * 1024 * 1024,
      maxSecurityEvents: 200,
      maxProgressBytes: 64 * 1024,
      maxJournalBytes: 16 * 1024 * 1024,
      maxBlobBytes: 64 * 1024 * 1024,
      cancelPollMs: 250,
      prestartGuest: false as boolean,
      projectDir: platform().cwd(),
      userHome: platform().homeDir(),
    }, options),
    sessions: options.sessions ?? new SessionStore(options.ledger),
    workspace: options.workspace ?? new WorkspacePolicy({
      forbidden: [options.ledger.home],
      home: options.ledger.home,
    }),
  };
}
