/**
 * Which accelerator the `qemu` backend runs its VMs with: KVM where it really works, software
 * emulation (TCG) elsewhere. A `/dev/kvm` is not proof: on PVM hosts (`/sys/module/kvm_pvm`) it
 * boots only kernels built for PVM, and QEMU with `-accel kvm` then aborts or hangs spinning a
 * core instead of failing, so such a host gets TCG.
 * @module
 */
import { LIFELINE_SHELL, platform } from "../platform/mod.ts";
import { microvmUnavailable, type QemuAccelSetting } from "./microvm_config.ts";

/** The accelerator of a VM. */
export type QemuAccel = "kvm" | "tcg";

/** The accelerator chosen, and why, for the run's status and `/api/status`. */
export interface QemuAccelChoice {
  /** `kvm` or `tcg`. */
  accel: QemuAccel;
  /** Why, in a few words (e.g. "/dev/kvm is PVM (kvm_pvm), which Debian's kernel cannot boot on"). */
  reason: string;
  /**
   * Under emulation, the host's TSC rate in kHz (the guest's TSC runs at it), handed to the
   * guest kernel: calibrating it against the emulated PIT fails on a busy host, and the kernel
   * then hangs at boot. Absent when the host does not say.
   */
  tscKhz?: number;
}

/** What the choice looks at on the host; tests pass their own. */
export interface AccelProbe {
  /** Which of `paths` exist. */
  existing(paths: readonly string[]): Promise<Set<string>>;
  /** The host's TSC rate in kHz, when it says (`cpu MHz` of /proc/cpuinfo). */
  tscKhz(): Promise<number | undefined>;
}

/** The paths the choice looks at. */
const KVM_PATHS = [
  "/dev/kvm",
  "/sys/module/kvm_pvm",
  "/sys/module/kvm_intel",
  "/sys/module/kvm_amd",
];

/**
 * The host's own files, looked at by `/bin/sh`: Deno lets only a host with every permission stat
 * `/dev` and `/sys` itself, and the host is granted no more than it needs.
 */
export function hostAccelProbe(): AccelProbe {
  return {
    async existing(paths) {
      const out = await shell('for p; do [ -e "$p" ] && echo "$p"; done; exit 0', paths);
      return new Set(out.split("\n").filter((line) => paths.includes(line)));
    },
    async tscKhz() {
      const out = await shell(
        "awk -F: '/^cpu MHz/ { printf \"%d\\n\", $2 * 1000; exit }' /proc/cpuinfo; exit 0",
        [],
      );
      const khz = Number(out.trim());
      return Number.isInteger(khz) && khz >= 100_000 && khz <= 20_000_000 ? khz : undefined;
    },
  };
}

async function shell(script: string, args: readonly string[]): Promise<string> {
  const child = platform().spawn(LIFELINE_SHELL, {
    args: ["-c", script, "svc-kvm-probe", ...args],
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
    cwd: "/",
  });
  await child.stdin.close().catch(() => {});
  const [out] = await Promise.all([new Response(child.stdout).text(), child.status]);
  await child.stderr.cancel().catch(() => {});
  return out;
}

/** The QEMU arguments of `accel`. */
export function accelArgs(accel: QemuAccel): string[] {
  return accel === "kvm"
    ? ["-accel", "kvm", "-cpu", "host"]
    : ["-accel", "tcg,tb-size=64", "-cpu", "max"];
}

/** Why KVM cannot be used here, or undefined when it can. */
async function kvmUnfit(probe: AccelProbe): Promise<string | undefined> {
  const found = await probe.existing(KVM_PATHS);
  if (!found.has("/dev/kvm")) return "/dev/kvm is missing";
  if (found.has("/sys/module/kvm_pvm")) {
    return "/dev/kvm is PVM (kvm_pvm), which Debian's kernel cannot boot on";
  }
  if (!found.has("/sys/module/kvm_intel") && !found.has("/sys/module/kvm_amd")) {
    return "/dev/kvm has neither kvm_intel nor kvm_amd behind it";
  }
  return undefined;
}

/**
 * The accelerator for `setting`: `tcg` always emulates; `kvm` requires working KVM and fails
 * closed (naming what is missing) without it; `auto` takes KVM when it works, else TCG.
 */
export async function chooseAccel(
  setting: QemuAccelSetting,
  probe: AccelProbe = hostAccelProbe(),
): Promise<QemuAccelChoice> {
  const tcg = async (reason: string): Promise<QemuAccelChoice> => {
    const tscKhz = await probe.tscKhz();
    return tscKhz === undefined ? { accel: "tcg", reason } : { accel: "tcg", reason, tscKhz };
  };
  if (setting === "tcg") return await tcg("SVC_WORKFLOW_MICROVM_QEMU_ACCEL=tcg");
  const unfit = await kvmUnfit(probe);
  if (unfit === undefined) return { accel: "kvm", reason: "/dev/kvm works (VT-x/AMD-V)" };
  if (setting === "kvm") {
    throw microvmUnavailable(
      `${unfit}, and SVC_WORKFLOW_MICROVM_QEMU_ACCEL=kvm requires KVM (use auto or tcg for ` +
        "software emulation)",
    );
  }
  return await tcg(unfit);
}
