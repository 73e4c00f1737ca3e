import type { Config, LoadedConfig } from "../config/mod.ts";
import { SvcError, toSvcError } from "../errors/mod.ts";
import type { Caller } from "../ledger/mod.ts";
import { CONFIG_ERROR_CHARS, type ConfigState } from "../schemas/mod.ts";

/**
 * Keys of the configuration a running host cannot take again: they size or shape what was
 * built at start (the daemon's worker pool and scheduler, the run manager's progress
 * recorder). A change to one is reported as needing a restart.
 */
export const RESTART_KEYS: readonly string[] = [
  "progress",
  "daemon.concurrency",
  "daemon.scheduler",
  "daemon.catch_up_s",
];

/** What a reload did. */
export interface ConfigReloadOutcome {
  /** `reloaded`: the file was taken; `unchanged`: it says what runs already; `refused`: invalid. */
  outcome: "reloaded" | "unchanged" | "refused";
  /** The state after it. */
  state: ConfigState;
}

/** What made a reload happen, for the terminal's line. */
export type ReloadTrigger = "file" | "signal" | "request" | "command";

/** Options of {@linkcode ConfigReload}. */
export interface ConfigReloadOptions {
  /** The configuration the host started with. */
  initial: LoadedConfig;
  /** Reads and validates the configuration file (the composition root's reader). */
  read: () => Promise<LoadedConfig>;
  /** Puts a validated configuration into effect (providers, routing, automations, ...). */
  apply: (config: Config) => void;
  /**
   * Calls its argument whenever the file may have changed; returns a function that stops it.
   * @default none: only {@linkcode ConfigReload.reload} reloads
   */
  watchFile?: (onChange: () => void) => () => void;
  /**
   * Calls its argument on the host's reload signal (SIGHUP); returns a function that stops it.
   * @default none
   */
  onSignal?: (onSignal: () => void) => () => void;
  /**
   * How long the file must stay quiet after a change before it is read, in ms: an editor's
   * save is several writes.
   * @default 300
   */
  debounceMs?: number;
}

/**
 * Whether `caller` is the operator: the terminal, or a token bound to no owner (marked
 * `operator` by the authentication layer). Never by the owner's name: a token bound to an
 * owner named `local`, the name a token bound to no owner acts under, is that owner's.
 */
export function isOperator(caller: Caller): boolean {
  return caller.remote !== true || caller.admin === true || caller.operator === true;
}

/** The value at a dotted key of a configuration, as JSON text. */
function valueAt(config: Config, key: string): string {
  const value = key.split(".").reduce<unknown>(
    (at, part) =>
      at !== null && typeof at === "object" ? (at as Record<string, unknown>)[part] : undefined,
    config,
  );
  return JSON.stringify(value) ?? "undefined";
}

/**
 * The configuration of a running host, read again on request, on a change of its file and on
 * SIGHUP. A new configuration is read and validated in full before anything takes it; an
 * invalid one leaves the one in effect as it is, and its error (the file, the key, what is
 * wrong) is kept for the operator until a valid file replaces it. Reloads happen one at a time.
 */
export class ConfigReload {
  readonly #options: ConfigReloadOptions;
  readonly #started: Config;
  readonly #listeners = new Set<
    (event: ConfigReloadOutcome & { trigger: ReloadTrigger }) => void
  >();
  #config: Config;
  #state: ConfigState;
  #turn: Promise<unknown> = Promise.resolve();
  #stops: Array<() => void> = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** The reload of a host that started with `options.initial`. */
  constructor(options: ConfigReloadOptions) {
    this.#options = options;
    this.#config = options.initial.config;
    this.#started = options.initial.config;
    const at = new Date().toISOString();
    this.#state = {
      loaded_at: at,
      source: options.initial.path,
      checked_at: at,
      reloads: 0,
      restart_needed: [],
    };
  }

  /** The configuration in effect. */
  get config(): Config {
    return this.#config;
  }

  /** The state of the configuration (for the host's own use; see {@linkcode stateFor}). */
  state(): ConfigState {
    return { ...this.#state, restart_needed: [...this.#state.restart_needed] };
  }

  /** The state, for the operator only: another owner may not read the operator's configuration. */
  stateFor(caller: Caller): ConfigState {
    this.#checkOperator(caller, "read the configuration");
    return this.state();
  }

  /** Reloads for `caller`, who must be the operator (a token bound to no owner). */
  reloadFor(caller: Caller): Promise<ConfigReloadOutcome> {
    this.#checkOperator(caller, "reload the configuration");
    return this.reload("request");
  }

  /**
   * Reads the file again and, when it is valid, puts it into effect; when it is not, keeps the
   * configuration in effect and records why. Runs in flight keep what they started with.
   */
  reload(trigger: ReloadTrigger = "command"): Promise<ConfigReloadOutcome> {
    const next = this.#turn.then(() => this.#reloadNow());
    this.#turn = next.catch(() => {});
    return next.then((outcome) => {
      for (const listener of this.#listeners) listener({ ...outcome, trigger });
      return outcome;
    });
  }

  /** Calls `listener` after every reload; returns a function that stops it. */
  subscribe(
    listener: (event: ConfigReloadOutcome & { trigger: ReloadTrigger }) => void,
  ): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Reloads on every change of the file (after it has been quiet for the debounce) and on the
   * reload signal, until {@linkcode close}. A long-lived server calls it once.
   */
  watch(): void {
    if (this.#stops.length > 0) return;
    const debounceMs = this.#options.debounceMs ?? 300;
    const changed = () => {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.reload("file");
      }, debounceMs);
    };
    const noop = () => {};
    this.#stops.push(this.#options.watchFile?.(changed) ?? noop);
    this.#stops.push(this.#options.onSignal?.(() => void this.reload("signal")) ?? noop);
  }

  /** Stops watching. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const stop of this.#stops) stop();
    this.#stops = [];
  }

  async #reloadNow(): Promise<ConfigReloadOutcome> {
    const at = new Date().toISOString();
    let loaded: LoadedConfig;
    let same: boolean;
    try {
      loaded = await this.#options.read();
      same = JSON.stringify(loaded.config) === JSON.stringify(this.#config) &&
        loaded.path === this.#state.source;
      // Everything is built before anything is swapped: a failure leaves the old in effect.
      if (!same) this.#options.apply(loaded.config);
    } catch (error) {
      // The reader's message names the file and the key; never a stack.
      const message = toSvcError(error).message
        // The file's own words (a key, a parse error) reach terminals and the page: one line.
        // deno-lint-ignore no-control-regex -- control characters are what it removes
        .replace(/[\x00-\x1f\x7f]/g, " ")
        .slice(0, CONFIG_ERROR_CHARS);
      this.#state = { ...this.#state, checked_at: at, error: message };
      return { outcome: "refused", state: this.state() };
    }
    const restart = RESTART_KEYS.filter((key) =>
      valueAt(loaded.config, key) !== valueAt(this.#started, key)
    );
    if (!same) this.#config = loaded.config;
    this.#state = {
      loaded_at: same ? this.#state.loaded_at : at,
      source: loaded.path,
      checked_at: at,
      reloads: this.#state.reloads + (same ? 0 : 1),
      restart_needed: restart,
    };
    return { outcome: same ? "unchanged" : "reloaded", state: this.state() };
  }

  #checkOperator(caller: Caller, action: string): void {
    if (isOperator(caller)) return;
    throw new SvcError(
      "forbidden",
      `Cannot ${action}: it is the operator's, so it needs a token bound to no owner`,
    );
  }
}
