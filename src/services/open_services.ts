import { type Board, openBoard } from "../board/mod.ts";
import { ApprovalQueue } from "../approvals/mod.ts";
import { type Config, loadConfig, type LoadedConfig, svcHome } from "../config/mod.ts";
import {
  type Capabilities,
  createCapabilities,
  type Dispatcher,
  dispatcherFromConfig,
  hasHarnessProvider,
  swappableDispatcher,
} from "../dispatch/mod.ts";
import { SessionStore, TaskManager, type TaskManagerOptions } from "../tasks/mod.ts";
import { WorktreeManager } from "../worktrees/mod.ts";
import { RunManager, type RunManagerOptions } from "../engine/mod.ts";
import { type A2aTaskLedger, HostLease, type Ledger, openLedger } from "../ledger/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { GUEST_ENV_VARS, ledgerUrl, MICROVM_ENV_VARS, snapshotEnv } from "../host_env/mod.ts";
import { defaultIsolationBackends, type IsolationBackend } from "../isolation/mod.ts";
import { EventFeed } from "./event_feed.ts";
import { CollaborationLog } from "../collaborations/mod.ts";
import { type CardSource, MemorySearch } from "../memory/mod.ts";
import { ReviewService } from "../reviews/mod.ts";
import { Automations } from "../automations/mod.ts";
import { WorkspacePolicy } from "../workspace/mod.ts";
import { Admission, runAdmissionOf } from "./admission.ts";
import { daemonAlive } from "./daemon_alive.ts";
import { Streams } from "./streams.ts";
import { RunGraph } from "./run_graph.ts";
import { PulseService } from "./pulse.ts";
import { Notifications } from "./notifications.ts";
import { ConfigReload } from "./config_reload.ts";

/** How often a host looks for runs and tasks of dead hosts, in ms. */
const RECOVER_EVERY_MS = 5_000;

/** Run manager settings a surface may choose; the services supply the rest. */
export type RunSettings = Omit<
  RunManagerOptions,
  "dispatcher" | "ledger" | "sessions" | "host"
>;

/** Options of {@linkcode openServices}. */
export interface ServicesOptions {
  /** The data directory. Default: `SVC_HOME`, else `~/.svc`. */
  home?: string;
  /** The configuration. Default: `config.json` of the data directory, else the built-in one. */
  config?: Config;
  /**
   * The dispatcher. Default: built from the configuration, and rebuilt by each reload. One given
   * here is kept across reloads (which still reload automations, caps and roots).
   */
  dispatcher?: Dispatcher;
  /** Settings of the run manager (limits, isolation backends, project folder). */
  runs?: RunSettings;
  /** How often to recover dead hosts' runs and tasks while open, in ms. Default 5000. */
  recoverEveryMs?: number;
  /** How often readers waiting for events look for other processes' writes, in ms. Default 25. */
  pollMs?: number;
  /**
   * The database of a ledger shared with other hosts (`postgres://...`). Default:
   * `SVC_LEDGER_URL`; null for this machine's KV files whatever the environment says.
   */
  ledgerUrl?: string | null;
  /**
   * A long-lived server (dashboard, A2A server): while no daemon is alive it takes up runs left
   * queued in the ledger (by a server that stopped with runs waiting for a slot), so none
   * stays queued for good. Never for a one-shot command, which would take runs down with it.
   * Default false.
   */
  adoptQueuedRuns?: boolean;
  /** `daemon` for a daemon: other processes then leave queued work to it. */
  role?: "daemon";
  /** The board directory. Default: `SVC_DASHBOARD_BOARD_DIR`, else `board` in the data directory. */
  boardDir?: string;
  /** Memory search: where it reads board cards (default the board), how long an index is reused. */
  memory?: { cards?: CardSource; indexTtlMs?: number };
  /**
   * Workspace roots of owners the configuration's `workspaces` names none for (`svc mcp` over
   * stdio: the directory it was started in). Default none: such owners' remote requests work
   * in fresh scratch directories.
   */
  fallbackRoots?: readonly string[];
  /**
   * The `unsafe-local` tier's backend holding a guest started before the services opened
   * (`startEarlyGuest` of the engine: `svc workflow run` boots its run's guest while it opens
   * them). Default: the tier's own backend. Ignored when `runs` chooses the tiers.
   */
  earlyGuest?: IsolationBackend;
}

/** The board directory: the option, else `SVC_DASHBOARD_BOARD_DIR`, else `<home>/board`. */
function boardDirOf(home: string, option: string | undefined): string {
  return option ?? (platform().env("SVC_DASHBOARD_BOARD_DIR") || joinPath(home, "board"));
}

/** The directory of svc's own source, when it runs from files (not from a bundle). */
function ownCheckout(): string[] {
  const url = new URL("../../", import.meta.url);
  if (url.protocol !== "file:") return [];
  return [decodeURIComponent(url.pathname).replace(/\/$/, "")];
}

/**
 * Everything a surface (command line, dashboard, daemon, A2A and MCP servers) stands on,
 * opened once per process: one ledger, one host identity with one heartbeat, the dispatcher,
 * and the run, task, session, worktree and event services over them. Disposing it cancels
 * this host's work, stops its heartbeat and closes the ledger.
 */
export interface Services extends AsyncDisposable {
  /** The data directory. */
  readonly home: string;
  /** The configuration in effect (a reload replaces it; a run keeps the one it started with). */
  readonly config: Config;
  /** The configuration file, or null for the built-in default. */
  readonly configPath: string | null;
  /** Reloads the configuration (on request, on a change of the file, on SIGHUP) and reports it. */
  readonly configuration: ConfigReload;
  /** The one ledger every service writes to. */
  readonly ledger: Ledger;
  /** This process's identity in the ledger. */
  readonly host: HostLease;
  /** Routes and performs agent calls (providers, admission, availability). */
  readonly dispatcher: Dispatcher;
  /** What each configured provider can do here: tool, version, credentials, sandbox levels. */
  readonly capabilities: Capabilities;
  /** Multi-turn conversations. */
  readonly sessions: SessionStore;
  /** Asynchronous dispatches (tasks). */
  readonly tasks: TaskManager;
  /** Workflow runs. */
  readonly runs: RunManager;
  /** Git worktrees of `isolation: "worktree"` calls. */
  readonly worktrees: WorktreeManager;
  /** The event feed of every run and task. */
  readonly events: EventFeed;
  /** The board ledger (cards), in the board directory. */
  readonly board: Board;
  /** Full-text search over the caller's runs, tasks and board cards. */
  readonly memory: MemorySearch;
  /** Reviews: runs of the bundled review workflow over a git diff. */
  readonly reviews: ReviewService;
  /** The record of agent-to-agent exchanges. */
  readonly collaborations: CollaborationLog;
  /** The A2A server's task records (the SDK's task store keeps them here). */
  readonly a2aTasks: A2aTaskLedger;
  /** Calls and dispatches waiting for a person to grant them the `full` sandbox. */
  readonly approvals: ApprovalQueue;
  /** Saved workflows and dispatches on cron schedules (the daemon's scheduler fires them). */
  readonly automations: Automations;
  /** Admission control: event streams' caps, and how full every cap is. */
  readonly admission: Admission;
  /** The event streams of the surfaces, each opened with one call. */
  readonly streams: Streams;
  /** Runs as graphs of their calls (`GET /api/workflow/{run_id}/dag`). */
  readonly runGraph: RunGraph;
  /** The pulse: a caller's running, queued and waiting work, spend, providers, failures. */
  readonly pulse: PulseService;
  /** Each owner's notifications and their read state. */
  readonly notifications: Notifications;
  /** Runs and tasks of dead hosts this process marked `interrupted` when it opened. */
  readonly recovered: { runs: readonly string[]; tasks: readonly string[] };
  /** The same as disposing. */
  close(): Promise<void>;
}

/**
 * The run manager's settings: the configuration's caps and the isolation tiers over the
 * environment as it is now (read here, once), unless the surface (a test) chose its own.
 */
function runSettingsOf(
  config: Config,
  options: { home: string; chosen: RunSettings | undefined; early: IsolationBackend | undefined },
): RunSettings {
  const env = snapshotEnv([...GUEST_ENV_VARS, ...MICROVM_ENV_VARS]);
  const isolation = defaultIsolationBackends({ env, home: options.home });
  return {
    admission: runAdmissionOf(config.admission),
    isolation: options.early ? { ...isolation, "unsafe-local": options.early } : isolation,
    maxProgressBytes: config.progress.call_bytes,
    ...options.chosen,
  };
}

/** The settings of the task manager that come from the configuration. */
function taskSettingsOf(config: Config): Pick<
  TaskManagerOptions,
  "ownerLiveTasks" | "retryAfterS" | "progressBytes"
> {
  return {
    ownerLiveTasks: config.admission.owner_live_tasks,
    retryAfterS: config.admission.retry_after_s,
    progressBytes: config.progress.call_bytes,
  };
}

/** A dispatcher built from `config`, reading the host's environment through the root's reader. */
function dispatcherOf(config: Config, worktrees: WorktreeManager): Dispatcher {
  return dispatcherFromConfig(config, {
    worktrees,
    // The services read no environment: the root hands them its reader and its data directory.
    env: (name) => platform().env(name),
    ...(hasHarnessProvider(config) ? { scratchRoot: joinPath(svcHome(), "tmp") } : {}),
  });
}

/** What reports each configured provider's abilities, reading key variables through the root. */
function capabilitiesOf(config: Config): Capabilities {
  // The one place the report reads host variables: the key variables it names.
  return createCapabilities({ config, env: (name) => platform().env(name) });
}

/**
 * The configuration's reload: the root's reader, the watch of the file and SIGHUP, and how a
 * validated configuration goes into effect. Everything new is built before anything is swapped.
 */
function configReloadOf(
  home: string,
  loaded: LoadedConfig,
  parts: {
    dispatcher: ReturnType<typeof swappableDispatcher> | undefined;
    worktrees: WorktreeManager;
    host: HostLease;
    automations: Automations;
    admission: Admission;
    workspace: WorkspacePolicy;
    /** What the services hand out by a getter: replaced here. */
    live: { capabilities: Capabilities };
  },
): ConfigReload {
  const p = platform();
  const path = loaded.path;
  return new ConfigReload({
    initial: loaded,
    read: () => loadConfig(home),
    apply: (next) => {
      const dispatcher = parts.dispatcher ? dispatcherOf(next, parts.worktrees) : undefined;
      const capabilities = capabilitiesOf(next);
      parts.automations.configure(next);
      parts.admission.configure(next.admission);
      parts.workspace.setRoots(next.workspaces);
      parts.live.capabilities = capabilities;
      if (dispatcher && parts.dispatcher) {
        parts.dispatcher.swap(dispatcher);
        parts.host.setProviders(dispatcher.providers());
      }
    },
    ...(path ? { watchFile: (onChange: () => void) => p.watchFile(path, onChange) } : {}),
    onSignal: (handler) => p.onReload(handler),
  });
}

/**
 * The workspace policy: the configuration's roots, and what a remote caller may never reach:
 * the data directory (the configuration, the token, every owner's ledger), the board, and svc's
 * own source.
 */
function workspaceOf(
  config: Config,
  at: { home: string; boardDir: string; options: ServicesOptions },
): WorkspacePolicy {
  const { fallbackRoots } = at.options;
  return new WorkspacePolicy({
    roots: config.workspaces,
    ...(fallbackRoots ? { fallbackRoots } : {}),
    forbidden: [at.home, at.boardDir, ...ownCheckout()],
    home: at.home,
  });
}

/**
 * Takes up queued runs (a long-lived server while no daemon is alive) now, then recovers dead
 * hosts' runs and tasks and looks again every `recoverEveryMs`; returns the function that stops.
 */
async function startRecovery(
  parts: { ledger: Ledger; runs: RunManager; tasks: TaskManager; options: ServicesOptions },
): Promise<() => void> {
  const { ledger, runs, tasks, options } = parts;
  const adopt = async () => {
    if (options.adoptQueuedRuns && !(await daemonAlive(ledger))) await runs.adoptQueued();
  };
  await adopt();
  const recovery = setInterval(() => {
    runs.recover().catch(() => {});
    tasks.recover().catch(() => {});
    adopt().catch(() => {});
  }, options.recoverEveryMs ?? RECOVER_EVERY_MS);
  return () => clearInterval(recovery);
}

/**
 * Opens the ledger and the board together (two stores, neither waiting for the other); when
 * either fails, the other is closed and the failure thrown, the ledger's first.
 */
async function openStores(
  home: string,
  options: ServicesOptions,
  url: string | undefined,
): Promise<{ ledger: Ledger; board: Board }> {
  const settings = {
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    ...(url ? { url } : {}),
  };
  const [ledger, board] = await Promise.allSettled([
    openLedger(home, settings),
    openBoard(boardDirOf(home, options.boardDir), settings),
  ]);
  if (ledger.status === "fulfilled" && board.status === "fulfilled") {
    return { ledger: ledger.value, board: board.value };
  }
  if (ledger.status === "fulfilled") await ledger.value.close();
  if (board.status === "fulfilled") await board.value.close();
  throw ledger.status === "rejected" ? ledger.reason : (board as PromiseRejectedResult).reason;
}

/**
 * The composition root: opens the ledger of a data directory and builds every service over
 * it. Runs and tasks of hosts that died are recovered now, and every `recoverEveryMs` while
 * the services stay open.
 */
export async function openServices(options: ServicesOptions = {}): Promise<Services> {
  const home = options.home ?? svcHome();
  const loaded = options.config ? { config: options.config, path: null } : await loadConfig(home);
  const { config } = loaded;
  const worktrees = new WorktreeManager({ home });
  const swappable = options.dispatcher ? undefined : swappableDispatcher(
    dispatcherOf(config, worktrees),
  );
  const dispatcher = options.dispatcher ?? swappable!;
  const live = { capabilities: capabilitiesOf(config) };
  const url = options.ledgerUrl === undefined ? ledgerUrl() : options.ledgerUrl ?? undefined;
  const stores = await openStores(home, options, url);
  const { ledger } = stores;
  const host = new HostLease(ledger, {
    ...(options.role ? { role: options.role } : {}),
    providers: dispatcher.providers(),
  });
  let runs: RunManager | undefined;
  let tasks: TaskManager | undefined;
  const { board } = stores;
  try {
    const sessions = new SessionStore(ledger);
    const workspace = workspaceOf(config, { home, boardDir: board.dir, options });
    tasks = new TaskManager({
      dispatcher,
      ledger,
      sessions,
      host,
      workspace,
      ...taskSettingsOf(config),
    });
    const recoveredTasks = await tasks.recover();
    // Its sweep of `<home>/tmp` removes the scratch directories of dead hosts' harness calls too.
    runs = await RunManager.create({
      ...runSettingsOf(config, { home, chosen: options.runs, early: options.earlyGuest }),
      dispatcher,
      ledger,
      sessions,
      host,
      workspace,
    });
    const stopRecovery = await startRecovery({ ledger, runs, tasks, options });
    const events = new EventFeed({ runs, tasks, ledger });
    const admission = new Admission({ config: config.admission, runs, tasks });
    const streams = new Streams({ events, board, admission, runs, tasks });
    const automations = new Automations({ ledger, config, workspace });
    const configuration = configReloadOf(home, loaded, {
      dispatcher: swappable,
      worktrees,
      host,
      automations,
      admission,
      workspace,
      live,
    });
    let closing: Promise<void> | undefined;
    const close = () =>
      closing ??= (async () => {
        configuration.close();
        stopRecovery();
        await runs?.close();
        await tasks?.close();
        await host.close();
        await board.close();
        await ledger.close();
      })();
    return {
      home,
      get config() {
        return configuration.config;
      },
      get configPath() {
        return configuration.state().source;
      },
      configuration,
      ledger,
      host,
      dispatcher,
      get capabilities() {
        return live.capabilities;
      },
      sessions,
      tasks,
      runs,
      worktrees,
      events,
      board,
      memory: new MemorySearch({ runs, tasks, cards: board, ...options.memory }),
      reviews: new ReviewService({ runs, ledger, workspace }),
      collaborations: new CollaborationLog(ledger),
      a2aTasks: ledger,
      approvals: new ApprovalQueue({ ledger }),
      automations,
      admission,
      streams,
      runGraph: new RunGraph({ runs, ledger }),
      pulse: new PulseService({ ledger, dispatcher }),
      notifications: new Notifications(ledger),
      recovered: { runs: [...runs.recovered], tasks: recoveredTasks },
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await runs?.close().catch(() => {});
    await tasks?.close().catch(() => {});
    await board.close();
    await ledger.close();
    throw error;
  }
}
