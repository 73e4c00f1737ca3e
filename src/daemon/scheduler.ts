import { latestSlot, nextSlot } from "../automations/mod.ts";
import { type AutomationRecord, callerOf } from "../ledger/mod.ts";
import { toSvcError } from "../errors/mod.ts";
import type { Services } from "../services/mod.ts";
import { liveItem, skipReason } from "./backlog.ts";
import { startWork } from "./start_work.ts";

/** The lease that decides which daemon's scheduler fires automations. */
export const SCHEDULER_LEASE = "scheduler";
/** A slot this young always fires, whatever `catch_up_s` says: it is due now, not missed. */
const DUE_GRACE_MS = 30_000;

/** Options of {@linkcode Scheduler}. */
export interface SchedulerOptions {
  /** Who asks for the lease: the daemon's host id. */
  holder: string;
  /** Whether this daemon schedules at all. Default: the configuration's `daemon.scheduler`. */
  enabled?: boolean;
  /** The latest missed slot younger than this fires once; 0: never. Default: the configuration's. */
  catchUpS?: number;
  /** How often the scheduler looks at the clock and renews its lease, in ms. Default 1000. */
  tickMs?: number;
  /** How long a lease lasts without renewal, in ms. Default 10000. */
  leaseMs?: number;
}

/** What the scheduler is doing, for the health snapshot. */
export interface SchedulerState {
  /** `leader`: it fires automations; `standby`: another daemon leads; `off`: disabled here. */
  mode: "leader" | "standby" | "off";
  /** Automations it knows of (every owner's). */
  automations: number;
  /** The next slot of any automation (ISO 8601), or null. */
  next_slot_at: string | null;
  /** When it last ticked (ISO 8601), or null. */
  last_tick_at: string | null;
  /** Slots it has fired since it started. */
  fired: number;
  /** The last error of a tick, if the last tick failed. */
  error: string | null;
}

/**
 * The daemon's scheduler. Every tick it takes or renews the scheduler lease in the ledger; the
 * holder (the leader) fires each automation's latest due slot once. A slot is claimed in the
 * ledger before it fires (later than the last fired, checked atomically), so a slot fires once
 * across every daemon even while two briefly believe they lead. After downtime, the latest
 * missed slot fires once when it is younger than `catch_up_s`; older and earlier ones are
 * skipped. A slot before an automation existed never fires. A slot due while the run or task of
 * an earlier slot is still queued or running starts nothing (recorded as skipped), so an
 * automation never has more than one item waiting or working.
 */
export class Scheduler {
  readonly #services: Services;
  readonly #holder: string;
  readonly #enabled: boolean;
  readonly #catchUpMs: number;
  readonly #tickMs: number;
  readonly #leaseMs: number;
  #mode: SchedulerState["mode"] = "off";
  #automations: AutomationRecord[] = [];
  #lastTickAt: string | null = null;
  #fired = 0;
  #error: string | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = true;
  #ticking: Promise<void> = Promise.resolve();
  readonly #modeListeners = new Set<(mode: SchedulerState["mode"]) => void>();
  #settle: () => void = () => {};
  readonly #settled = new Promise<void>((resolve) => this.#settle = resolve);

  /** A scheduler over `services`; it does nothing until {@linkcode start}. */
  constructor(services: Services, options: SchedulerOptions) {
    this.#services = services;
    this.#holder = options.holder;
    this.#enabled = options.enabled ?? services.config.daemon.scheduler;
    this.#catchUpMs = (options.catchUpS ?? services.config.daemon.catch_up_s) * 1000;
    this.#tickMs = options.tickMs ?? 1000;
    this.#leaseMs = options.leaseMs ?? 10_000;
  }

  /**
   * Resolves once the election has settled: after the first tick (leader or standby), at once
   * when scheduling is off here. What a banner prints then agrees with `state()`.
   */
  settled(): Promise<void> {
    return this.#settled;
  }

  /**
   * Calls `listener` with the new mode whenever a tick changes it (a standby daemon taking the
   * lead, a leader losing it); returns a function that stops it.
   */
  onModeChange(listener: (mode: SchedulerState["mode"]) => void): () => void {
    this.#modeListeners.add(listener);
    return () => this.#modeListeners.delete(listener);
  }

  /** Starts ticking (when enabled). */
  start(): void {
    if (!this.#enabled) this.#settle();
    if (!this.#enabled || !this.#stopped) return;
    this.#stopped = false;
    this.#mode = "standby";
    this.#schedule(0);
  }

  /** Stops ticking and gives the lease up, so another daemon leads at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#settle();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#ticking;
    if (this.#mode === "leader") {
      await this.#services.ledger.releaseLease(SCHEDULER_LEASE, this.#holder).catch(() => {});
    }
    this.#mode = this.#enabled ? "standby" : "off";
  }

  /** What it is doing now. */
  state(): SchedulerState {
    const now = new Date();
    let next: number | null = null;
    for (const automation of this.#automations) {
      const slot = nextSlot(automation.cron, { after: now, timezone: automation.timezone });
      if (slot && (next === null || slot.getTime() < next)) next = slot.getTime();
    }
    return {
      mode: this.#mode,
      automations: this.#automations.length,
      next_slot_at: next === null ? null : new Date(next).toISOString(),
      last_tick_at: this.#lastTickAt,
      fired: this.#fired,
      error: this.#error,
    };
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#ticking = this.#tick().finally(() => {
        this.#settle();
        this.#schedule(this.#tickMs);
      });
    }, delayMs);
  }

  async #tick(): Promise<void> {
    try {
      const lease = await this.#services.ledger.acquireLease(SCHEDULER_LEASE, {
        holder: this.#holder,
        ttlMs: this.#leaseMs,
      });
      this.#setMode(lease.held ? "leader" : "standby");
      this.#automations = await this.#services.automations.all();
      if (lease.held) {
        for (const automation of this.#automations) {
          if (this.#stopped) break;
          await this.#fireDue(automation);
        }
      }
      this.#error = null;
    } catch (error) {
      this.#error = error instanceof Error ? error.message.slice(0, 300) : "the tick failed";
    }
    this.#lastTickAt = new Date().toISOString();
  }

  #setMode(mode: SchedulerState["mode"]): void {
    const before = this.#mode;
    this.#mode = mode;
    // The first tick settles the election: what it finds is the banner's, not a change.
    if (mode === before || this.#lastTickAt === null) return;
    for (const listener of this.#modeListeners) listener(mode);
  }

  /** Fires the automation's latest due slot, if it has not fired and is not too old. */
  async #fireDue(automation: AutomationRecord): Promise<void> {
    const { ledger } = this.#services;
    const now = Date.now();
    const slot = latestSlot(automation.cron, { at: new Date(now), timezone: automation.timezone });
    if (!slot || slot.getTime() < Date.parse(automation.created_at)) return;
    if (now - slot.getTime() > Math.max(this.#catchUpMs, DUE_GRACE_MS)) return;
    const id = automation.automation_id;
    const at = slot.toISOString();
    const last = await ledger.lastSlot(id);
    if (!(await ledger.claimSlot(id, at))) return;
    const busy = await liveItem(ledger, last);
    if (busy) {
      await ledger.saveSlot(id, {
        slot: at,
        at: new Date().toISOString(),
        item: { ...busy, skipped: skipReason(busy) },
      });
      return;
    }
    this.#fired++;
    // A remote caller's automation works as that caller each time: its workdir is checked
    // against today's roots, and its owner's caps bound what it queues.
    const caller = callerOf(automation.owner, automation.remote ? { remote: true } : {});
    const trigger = { kind: "automation" as const, automation_id: id, slot: at };
    try {
      const item = await startWork(this.#services, automation.action, { caller, trigger });
      await ledger.saveSlot(id, { slot: at, at: new Date().toISOString(), item });
    } catch (error) {
      const message = toSvcError(error).message.slice(0, 500);
      await ledger.saveSlot(id, {
        slot: at,
        at: new Date().toISOString(),
        item: { error: message },
      });
    }
  }
}
