/**
 * Isolation tiers: where a guest runs. Every guest is spawned through {@linkcode isolationBackend}.
 * @module
 */
import type { EnvReader } from "../host_env/mod.ts";
import type { IsolationTier } from "../schemas/mod.ts";
import { createMicrovmBackend } from "./microvm.ts";
import type { IsolationBackend } from "./types.ts";
import { createUnsafeLocalBackend } from "./unsafe_local.ts";

export type { GuestHandle, GuestSpawnRequest, IsolationBackend, IsolationReport } from "./types.ts";
export { bubblewrapArgv, findBubblewrap, guestExit, lddPaths } from "./bubblewrap.ts";
export type {
  Bubblewrap,
  BubblewrapCommand,
  BubblewrapProbe,
  FindBubblewrapOptions,
} from "./bubblewrap.ts";
export { confine, type ConfinedCommand, type GuestCommand } from "./confine.ts";
export {
  macosDenyProfile,
  type MacosProfileOptions,
  SENSITIVE_HOME_PATHS,
} from "./macos_profile.ts";
export { type GuestSandbox, parseSandboxMode, type SandboxMode } from "./sandbox_mode.ts";
export { createMicrovmBackend } from "./microvm.ts";
export { type PrestartedBackend, prestartedBackend, type PrestartOptions } from "./prestart.ts";
export type { MicrovmOptions } from "./microvm.ts";
export {
  DEFAULT_KRUNVM_IMAGE,
  MICROVM_ENV_VARS,
  MICROVM_TOOLS,
  microvmBackendName,
  readMicrovmSettings,
} from "./microvm_config.ts";
export type { MicrovmBackendName, MicrovmSettings, QemuAccelSetting } from "./microvm_config.ts";
export { MicrovmSlots } from "./microvm_slots.ts";
export { guestImportMap } from "./guest_imports.ts";
export {
  QEMU_DATA_HEADROOM_MB,
  QEMU_GUEST_DENO,
  QEMU_GUEST_IMPORT_MAP,
  QEMU_GUEST_MODULES,
  QEMU_GUEST_STAGE0,
  QEMU_IMAGE_FILES,
  type QemuGuestParams,
  qemuInitScript,
  qemuKernelCmdline,
} from "./microvm_qemu_image.ts";
export {
  createUnsafeLocalBackend,
  defaultBootstrapPath,
  GUEST_RUNTIME_FLAGS,
} from "./unsafe_local.ts";
export type { UnsafeLocalOptions } from "./unsafe_local.ts";
export type { EnvReader } from "../host_env/mod.ts";

/** The backends of the isolation tiers, keyed by tier name. */
export type IsolationBackends = Record<IsolationTier, IsolationBackend>;

/**
 * The default backend of every tier, reading their settings from `options.env` (the composition
 * root's snapshot; the host's environment by default).
 */
export function defaultIsolationBackends(
  options: { env?: EnvReader; home?: string } = {},
): IsolationBackends {
  return {
    "unsafe-local": createUnsafeLocalBackend(options.env ? { env: options.env } : {}),
    microvm: createMicrovmBackend(options),
  };
}
