import type { ChildProcess } from "../platform/mod.ts";
import type { GuestSandbox } from "./sandbox_mode.ts";

/** What a backend needs to start one guest. */
export interface GuestSpawnRequest {
  /** Directory under which the backend may create the guest's private scratch space. */
  scratchRoot: string;
  /** V8 heap cap of the guest in MiB. */
  heapMb: number;
  /** Seed of the guest's native random sources, so a stray path stays reproducible. */
  seed: number;
  /**
   * CPU seconds after which the kernel kills the guest. The host kills it at the run's
   * timeout anyway; this bound also holds when the host itself died and left it orphaned.
   */
  cpuSeconds?: number;
  /** Aborting gives up a spawn still under way (waiting for a microVM slot, creating a VM). */
  signal?: AbortSignal;
  /** Hears that the guest waits for a free slot (microVM tier), e.g. to tell the run's narration. */
  onQueued?(message: string): void;
}

/** A started guest: its process with piped stdio, and how to tear it down. */
export interface GuestHandle {
  /** The guest's process: the bridge protocol runs over its standard streams. */
  readonly process: ChildProcess;
  /** What confines the guest beyond a permissionless process; absent when the tier says nothing. */
  readonly sandbox?: GuestSandbox;
  /** Kills the guest's whole process group if still alive and removes its scratch space. Idempotent. */
  dispose(): Promise<void>;
}

/** One isolation tier. Backends differ in where the guest runs, never in the bridge protocol. */
export interface IsolationBackend {
  /** The tier it implements, e.g. `unsafe-local`. */
  readonly name: string;
  /** Starts one guest; rejects with an SvcError when the tier cannot run one here. */
  spawn(request: GuestSpawnRequest): Promise<GuestHandle>;
}
