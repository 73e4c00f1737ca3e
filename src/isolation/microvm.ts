import type { EnvReader } from "../host_env/mod.ts";
import type { GuestBundle } from "./guest_bundle.ts";
import { type MicrovmSettings, readMicrovmSettings } from "./microvm_config.ts";
import { bundleLoader } from "./microvm_guest.ts";
import { spawnKrunvmGuest } from "./microvm_krunvm.ts";
import { spawnLimaGuest } from "./microvm_lima.ts";
import { spawnQemuGuest } from "./microvm_qemu.ts";
import { type MicrovmSlots, sharedMicrovmSlots } from "./microvm_slots.ts";
import { describeQemu } from "./microvm_qemu.ts";
import type { GuestHandle, GuestSpawnRequest, IsolationBackend, IsolationReport } from "./types.ts";

/** Options of {@linkcode createMicrovmBackend}. */
export interface MicrovmOptions {
  /** Settings instead of the `SVC_WORKFLOW_MICROVM_*` variables, which are checked at each spawn. */
  settings?: MicrovmSettings;
  /**
   * Where the `SVC_WORKFLOW_MICROVM_*` variables are read: the composition root's snapshot.
   * @default {hostEnv}
   */
  env?: EnvReader;
  /**
   * The data directory whose `microvm/current` is the qemu backend's image when
   * `SVC_WORKFLOW_MICROVM_QEMU_IMAGE` names none.
   * @default {svcHome()}
   */
  home?: string;
  /** The pool of VM slots; default the process-wide one of the configured cap. */
  slots?: MicrovmSlots;
  /** The guest bootstrap whose modules are sent into the VM; defaults to guest/bootstrap.js. */
  bootstrapPath?: string;
}

/** The settings `options` give, or those its environment reader holds (checked, may throw). */
function settingsOf(options: MicrovmOptions): MicrovmSettings {
  return options.settings ??
    readMicrovmSettings(options.env, options.home !== undefined ? { home: options.home } : {});
}

/**
 * The `microvm` tier: the guest runs in a Linux micro-VM, Lima's resident instance
 * (`backend_a`), a krunvm VM of its own (`backend_b`) or a QEMU `microvm` machine of its own
 * (`qemu`), with no host directory mounted; the
 * bootstrap travels over the bridge. A missing or unfit backend fails the run closed with
 * `isolation_unavailable`: nothing ever falls back to running the script locally.
 */
export function createMicrovmBackend(options: MicrovmOptions = {}): IsolationBackend {
  const bundle: () => Promise<GuestBundle> = bundleLoader(options.bootstrapPath);
  return {
    name: "microvm",
    spawn(request: GuestSpawnRequest): Promise<GuestHandle> {
      let settings: MicrovmSettings;
      try {
        settings = settingsOf(options);
      } catch (error) {
        return Promise.reject(error);
      }
      const slots = options.slots ?? sharedMicrovmSlots(settings.maxConcurrent);
      const spawn = settings.backend === "backend_b"
        ? spawnKrunvmGuest
        : settings.backend === "qemu"
        ? spawnQemuGuest
        : spawnLimaGuest;
      return spawn(request, { settings, slots, bundle });
    },
    prestarts(): boolean {
      try {
        return settingsOf(options).backend === "qemu";
      } catch {
        return false;
      }
    },
    async describe(): Promise<IsolationReport> {
      let settings: MicrovmSettings;
      try {
        settings = settingsOf(options);
      } catch (error) {
        const note = error instanceof Error ? error.message : String(error);
        return { backend: null, accel: null, ready: false, note };
      }
      if (settings.backend === "qemu") return await describeQemu(settings);
      const note = settings.backend === "backend_a"
        ? "Lima: one resident instance for every microvm run"
        : "krunvm: a VM of its own for each run";
      return { backend: settings.backend, accel: null, ready: null, note };
    },
  };
}
