import { joinPath } from "../platform/mod.ts";
import {
  type EnvReader,
  hostEnv,
  type MicrovmBackendName,
  microvmBackendName,
  microvmUnavailable,
  shown,
  svcHome,
} from "../host_env/mod.ts";

export {
  MICROVM_ENV_VARS,
  MICROVM_TOOLS,
  type MicrovmBackendName,
  microvmBackendName,
  microvmUnavailable,
} from "../host_env/mod.ts";

/** Settings of the `microvm` tier, from the `SVC_WORKFLOW_MICROVM_*` environment variables. */
export interface MicrovmSettings {
  /** `SVC_WORKFLOW_MICROVM_BACKEND`: `backend_a` (Lima, the default), `backend_b` (krunvm) or `qemu`. */
  backend: MicrovmBackendName;
  /**
   * `SVC_WORKFLOW_MICROVM_GUEST_DENO`: absolute path of Deno inside the VM. Default
   * `/usr/local/bin/deno` for Lima, `/usr/bin/deno` (where the official image has it) for krunvm.
   */
  guestDeno: string;
  /** `SVC_WORKFLOW_MICROVM_MAX_CONCURRENT`: micro-VMs at once in this process; default 4. */
  maxConcurrent: number;
  /** `SVC_WORKFLOW_MICROVM_LIMA_INSTANCE`: the Lima instance of `backend_a`; default `svc`. */
  limaInstance: string;
  /** `SVC_WORKFLOW_MICROVM_KRUNVM_IMAGE`: the OCI image of `backend_b`. */
  krunvmImage: string;
  /** `SVC_WORKFLOW_MICROVM_KRUNVM_MEM_MB`: memory of each `backend_b` VM in MiB; default 512. */
  krunvmMemMb: number;
  /**
   * `SVC_WORKFLOW_MICROVM_QEMU_IMAGE`: the directory of the `qemu` backend's image, as
   * `deno task microvm:image` prints it. Default `$SVC_HOME/microvm/current`, the newest build.
   */
  qemuImage?: string;
  /**
   * `SVC_WORKFLOW_MICROVM_QEMU_MEM_MB`: memory of each `qemu` VM in MiB. Default (undefined):
   * the guest's heap cap + 768 MiB, so that a heap blow-up meets V8's limit (reported as out of
   * memory) before the VM's kernel kills the guest.
   */
  qemuMemMb?: number;
  /**
   * `SVC_WORKFLOW_MICROVM_QEMU_ACCEL`: `auto` (the default: KVM where it really works, else
   * software emulation), `kvm` (required: fails closed without it) or `tcg` (emulation).
   */
  qemuAccel?: QemuAccelSetting;
}

/** The values of `SVC_WORKFLOW_MICROVM_QEMU_ACCEL`. */
export type QemuAccelSetting = "auto" | "kvm" | "tcg";

/** The official Deno image at the version the specification names. */
export const DEFAULT_KRUNVM_IMAGE = "docker.io/denoland/deno:2.9.1";

/** A whole-number setting of `env`, checked against `range`. */
const integerIn = (env: EnvReader) =>
(
  name: string,
  fallback: number,
  range: [number, number],
): number => {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  const value = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= range[0] && value <= range[1])) {
    throw microvmUnavailable(
      `${name} must be a whole number from ${range[0]} to ${range[1]}, not '${shown(raw, 40)}'`,
    );
  }
  return value;
};

/** A text setting of `env`, held to `pattern`. */
const textIn = (env: EnvReader) =>
(
  name: string,
  fallback: string,
  pattern: RegExp,
  what: string,
): string => {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!pattern.test(raw)) {
    throw microvmUnavailable(`${name} must be ${what}, not '${shown(raw, 80)}'`);
  }
  return raw;
};

/**
 * Reads and checks the tier's settings. Each value ends up on a tool's command line, so each is
 * held to a strict shape; a bad one fails closed with `isolation_unavailable` naming it. `env` is
 * the snapshot the composition root took (the host's environment for a backend built without it).
 */
export function readMicrovmSettings(
  env: EnvReader = hostEnv,
  options: { home?: string } = {},
): MicrovmSettings {
  const backend = microvmBackendName(env);
  const [text, integer] = [textIn(env), integerIn(env)];
  return {
    backend,
    guestDeno: text(
      "SVC_WORKFLOW_MICROVM_GUEST_DENO",
      backend === "backend_a" ? "/usr/local/bin/deno" : "/usr/bin/deno",
      /^\/[A-Za-z0-9._+@\/-]{1,255}$/,
      "an absolute path inside the VM",
    ),
    maxConcurrent: integer("SVC_WORKFLOW_MICROVM_MAX_CONCURRENT", 4, [1, 256]),
    limaInstance: text(
      "SVC_WORKFLOW_MICROVM_LIMA_INSTANCE",
      "svc",
      /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
      "a Lima instance name",
    ),
    krunvmImage: text(
      "SVC_WORKFLOW_MICROVM_KRUNVM_IMAGE",
      DEFAULT_KRUNVM_IMAGE,
      /^[A-Za-z0-9][A-Za-z0-9._\/:@-]{0,254}$/,
      "an OCI image reference",
    ),
    krunvmMemMb: integer("SVC_WORKFLOW_MICROVM_KRUNVM_MEM_MB", 512, [128, 65536]),
    ...(backend === "qemu" ? readQemuSettings(env, options.home ?? svcHome()) : {}),
  };
}

/** Where `deno task microvm:image` puts the newest image by default: `$SVC_HOME/microvm/current`. */
export function defaultQemuImage(home: string = svcHome()): string {
  return joinPath(home, "microvm", "current");
}

/** The `qemu` backend's part of the settings; read only when it is the backend (its default needs `SVC_HOME`). */
function readQemuSettings(
  env: EnvReader,
  home: string,
): Pick<MicrovmSettings, "qemuImage" | "qemuMemMb" | "qemuAccel"> {
  const [text, integer] = [textIn(env), integerIn(env)];
  const memMb = env("SVC_WORKFLOW_MICROVM_QEMU_MEM_MB")
    ? integer("SVC_WORKFLOW_MICROVM_QEMU_MEM_MB", 0, [256, 1048576])
    : undefined;
  return {
    qemuImage: text(
      "SVC_WORKFLOW_MICROVM_QEMU_IMAGE",
      defaultQemuImage(home),
      /^\/[A-Za-z0-9._+@\/-]{1,1000}$/,
      "the absolute path of an image directory (deno task microvm:image prints it)",
    ),
    qemuMemMb: memMb,
    qemuAccel: text(
      "SVC_WORKFLOW_MICROVM_QEMU_ACCEL",
      "auto",
      /^(auto|kvm|tcg)$/,
      "auto, kvm or tcg",
    ) as QemuAccelSetting,
  };
}
