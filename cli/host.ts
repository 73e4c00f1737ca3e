import { type Config, loadConfig, svcHome } from "../src/config/mod.ts";
import {
  type Dispatcher,
  dispatcherFromConfig,
  SessionStore,
  TaskManager,
  WorktreeManager,
} from "../src/dispatch/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { Ledger } from "../src/ledger/mod.ts";
import { joinPath } from "../src/platform/mod.ts";
import { sweepScratch } from "../src/scratch/mod.ts";

/** The services one command-line invocation works with. */
export interface Host extends AsyncDisposable {
  home: string;
  config: Config;
  /** The configuration file, or null for the embedded default. */
  configPath: string | null;
  ledger: Ledger;
  dispatcher: Dispatcher;
  sessions: SessionStore;
  tasks: TaskManager;
  worktrees: WorktreeManager;
  /** The run manager, created on first use (it recovers interrupted runs). */
  runs(): Promise<RunManager>;
}

/** Opens the ledger and builds the services from the configuration of `SVC_HOME`. */
export async function openHost(): Promise<Host> {
  const home = svcHome();
  const { config, path } = await loadConfig(home);
  const worktrees = new WorktreeManager({ home });
  const dispatcher = dispatcherFromConfig(config, { worktrees });
  const ledger = await Ledger.open(home);
  const sessions = new SessionStore(ledger);
  const tasks = new TaskManager({ dispatcher, ledger, sessions });
  await tasks.recover();
  // Scratch directories of harness calls and guests whose host died (the run manager sweeps
  // too, but a task worker never makes one).
  await sweepScratch(joinPath(home, "tmp"));
  let runs: RunManager | undefined;
  return {
    home,
    config,
    configPath: path,
    ledger,
    dispatcher,
    sessions,
    tasks,
    worktrees,
    async runs() {
      runs ??= await RunManager.create({ dispatcher, ledger, sessions });
      return runs;
    },
    async [Symbol.asyncDispose]() {
      await runs?.close();
      await tasks.close();
      ledger.close();
    },
  };
}
