/**
 * What a caller hands the dispatcher, and the options it is built with: apart from the
 * dispatcher, so that the provider pool it composes can name them too.
 * @module
 */
import type { Config } from "../config/mod.ts";
import type { AgentOptions } from "../schemas/mod.ts";
import type { AvailabilityOptions } from "./availability.ts";
import type { ChatMessage, Provider } from "./types.ts";
import type { WorktreeManager } from "../worktrees/mod.ts";
import type { ProgressListener } from "./progress.ts";

/** What a caller hands the dispatcher: the call, before routing and admission. */
export interface DispatchInput {
  /** The prompt. */
  prompt: string;
  /** The call's options, as `agent()` takes them. */
  options: AgentOptions;
  /** The agent's system prompt (an `agentType`'s body), for the provider to apply. */
  system?: string;
  /** Aborting stops the call, wherever it is (queued, routed or running). */
  signal: AbortSignal;
  /** Working directory of the call; a fresh scratch directory for a harness when absent. */
  cwd?: string;
  /**
   * The real path checked when the call's run or task started: `cwd`, resolved again right
   * before a process starts, must still lie inside it (a link made since is refused).
   */
  cwdRoot?: string;
  /** A harness's own session id to continue (a session's turn). */
  resumeSession?: string;
  /** An API session's earlier messages, oldest first. */
  history?: ChatMessage[];
  /** Receives the call's progress, redacted and bounded by the provider's channel. */
  onProgress?: ProgressListener;
  /** Called at every sign of life of the call (a line of its tool, a chunk of its stream). */
  onActivity?: () => void;
  /** Told how many of the agent's tool uses are running, by a provider that can tell. */
  onToolsRunning?: (count: number) => void;
}

/** Options of `createDispatcher()`. */
export interface DispatcherOptions {
  /**
   * Latency of the fake provider; else the configuration's, else `SVC_FAKE_LATENCY_MS` as
   * {@linkcode DispatcherOptions.env} reads it, else 0.
   */
  fakeLatencyMs?: number;
  /**
   * Random extra latency of the fake provider, up to this; else the configuration's, else
   * `SVC_FAKE_JITTER_MS` as {@linkcode DispatcherOptions.env} reads it, else 0.
   */
  fakeJitterMs?: number;
  /** Cost in USD of every fake call; 0 unless configured. */
  fakeCostUsd?: number;
  /** Providers beside `fake`, which is always registered. */
  providers?: Provider[];
  /**
   * Simultaneous calls per provider, shared by every run and task that uses this dispatcher,
   * so that one fan-out cannot take a provider's whole quota. The configuration's
   * `providers.<name>.concurrency` counts too; a provider named in neither has no cap.
   */
  concurrency?: Record<string, number>;
  /** Profiles, routing preferences, prices, tags and the `full` sandbox policy. Default: none. */
  config?: Config;
  /** How long probes are trusted and when failing providers are set aside. */
  availability?: AvailabilityOptions;
  /** Where `isolation: "worktree"` calls get their worktrees; without it such calls are refused. */
  worktrees?: WorktreeManager;
  /**
   * How the host's environment is read, passed by the composition root: the dispatcher reads
   * no environment of its own. A variable is read only when nothing else gives its value.
   * Without it, no variable is set.
   */
  env?: (name: string) => string | undefined;
}
