import { platform } from "../platform/mod.ts";
import { newId } from "./ids.ts";
import type { HostLedger, HostRef } from "./interface.ts";

/** How often a host with work refreshes its heartbeat, in ms. */
export const HEARTBEAT_MS = 2_000;

/**
 * The identity of this process in the ledger, shared by its run and task managers: one id,
 * one heartbeat. The heartbeat runs while anything holds the lease (a run, a task), so that
 * another process can tell a live host from a dead one and recover the dead one's work.
 */
export class HostLease {
  #ref: HostRef;
  readonly #ledger: HostLedger;
  readonly #startedAt = new Date().toISOString();
  readonly #intervalMs: number;
  #holds = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #first: Promise<void> | undefined;

  /** A new identity on `ledger`; its heartbeat starts with the first hold. */
  constructor(
    ledger: HostLedger,
    options: { heartbeatMs?: number; role?: "daemon"; providers?: readonly string[] } = {},
  ) {
    this.#ledger = ledger;
    this.#intervalMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.#ref = {
      id: newId("host"),
      pid: platform().pid(),
      ...(options.role ? { role: options.role } : {}),
      ...(options.providers ? { providers: options.providers } : {}),
    };
  }

  /** This host as the ledger records it. */
  get ref(): HostRef {
    return this.#ref;
  }

  /**
   * Names the providers this host has now (after a configuration reload); the next heartbeat
   * tells the other hosts.
   */
  setProviders(providers: readonly string[]): void {
    this.#ref = { ...this.#ref, providers: [...providers] };
  }

  /** When this host started (ISO 8601). */
  get startedAt(): string {
    return this.#startedAt;
  }

  /** Writes the heartbeat now: a write to the ledger that fails when the ledger cannot be written. */
  beat(): Promise<void> {
    return this.#ledger.heartbeat(this.ref, this.#startedAt);
  }

  /**
   * Holds the lease until the returned function is called. Resolves once the host's record is
   * written, so that work recorded after it is never taken for a dead host's.
   */
  async hold(): Promise<() => void> {
    this.#holds++;
    if (this.#timer === undefined) {
      this.#first = this.#ledger.heartbeat(this.ref, this.#startedAt);
      this.#timer = setInterval(() => {
        this.#ledger.heartbeat(this.ref, this.#startedAt).catch(() => {});
      }, this.#intervalMs);
    }
    try {
      await this.#first;
    } catch (error) {
      this.#release();
      throw error;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#release();
    };
  }

  #release(): void {
    if (--this.#holds > 0) return;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Stops the heartbeat and removes the host's record: it has shut down cleanly. */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#holds = 0;
    await this.#ledger.removeHost(this.ref).catch(() => {});
  }
}
