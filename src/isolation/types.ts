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
  /**
   * The guest is started ahead of need (prestart.ts): a backend with a cap of guests gives it a
   * free slot or refuses it, never a place in the queue of runs.
   */
  ahead?: boolean;
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

/** What a tier says about itself on `/api/status`: which backend, how it runs, whether it can. */
export interface IsolationReport {
  /** The backend the tier's runs use (`backend_a`, `backend_b`, `qemu`), or null when none is configured right. */
  backend: string | null;
  /** The accelerator of its VMs (`kvm` or `tcg`, software emulation), or null where it says none. */
  accel: "kvm" | "tcg" | null;
  /** Whether a run could start now (the tool, the image and the accelerator found), or null when not checked. */
  ready: boolean | null;
  /** What is missing or how the VMs run, for people. */
  note: string;
}

/** One isolation tier. Backends differ in where the guest runs, never in the bridge protocol. */
export interface IsolationBackend {
  /** The tier it implements, e.g. `unsafe-local`. */
  readonly name: string;
  /** Starts one guest; rejects with an SvcError when the tier cannot run one here. */
  spawn(request: GuestSpawnRequest): Promise<GuestHandle>;
  /** What the tier says about itself on `/api/status`; absent when it says nothing. */
  describe?(): Promise<IsolationReport>;
  /**
   * Whether a guest started ahead of need pays off here (a VM that boots for seconds), so that a
   * host keeps one waiting; absent: no.
   */
  prestarts?(): boolean;
}
