/**
 * The `qemu` backend of the microvm tier: one QEMU `microvm` machine per run, booted from the
 * image `deno task microvm:image` builds (microvm_qemu_image.ts). The VM has no network device
 * and no host directory: its only ways out are two virtio-serial ports, the guest's stdin and
 * stdout on one (QEMU's own stdio) and its stderr on the other; the kernel's console goes
 * nowhere. The image's root is a read-only disk; the bundle and the frames cross the port as
 * for the other backends.
 * @module
 */
import { joinPath, platform } from "../platform/mod.ts";
import type { GuestBundle } from "./guest_bundle.ts";
import {
  defaultQemuImage,
  type MicrovmSettings,
  microvmUnavailable,
  type QemuAccelSetting,
} from "./microvm_config.ts";
import { sendBundle, settled } from "./microvm_guest.ts";
import { accelArgs, chooseAccel, type QemuAccelChoice } from "./microvm_qemu_accel.ts";
import { withVmExit } from "./microvm_qemu_exit.ts";
import {
  QEMU_DATA_HEADROOM_MB,
  QEMU_IMAGE_FILES,
  qemuKernelCmdline,
} from "./microvm_qemu_image.ts";
import type { MicrovmSlots } from "./microvm_slots.ts";
import type { GuestHandle, GuestSpawnRequest, IsolationReport } from "./types.ts";

/** The QEMU binary the backend runs, found on PATH. */
export const QEMU_BINARY = "qemu-system-x86_64";
/** How long a killed QEMU may take to end before the slot is given back anyway. */
const KILL_WAIT_MS = 5_000;

const INSTALL = "apt-get install -y --no-install-recommends qemu-system-x86 " +
  "linux-image-cloud-amd64 busybox-static cpio squashfs-tools";

/** What one VM is started from, once the host has everything it needs. */
export interface QemuPlan {
  /** The QEMU binary. */
  qemu: string;
  /** The image directory. */
  image: string;
  /** The accelerator, and why. */
  accel: QemuAccelChoice;
}

/**
 * Checks the host for QEMU, the image's kernel, initramfs and root disk, and the accelerator;
 * anything missing fails closed naming it and how to get it.
 */
export async function qemuPlan(settings: MicrovmSettings): Promise<QemuPlan> {
  const p = platform();
  const qemu = p.which(QEMU_BINARY);
  if (qemu === undefined) {
    throw microvmUnavailable(
      `QEMU (${QEMU_BINARY}, SVC_WORKFLOW_MICROVM_BACKEND=qemu) was not found on PATH; install ` +
        `it with: ${INSTALL}`,
    );
  }
  const image = settings.qemuImage ?? defaultQemuImage();
  if (!await p.stat(image).then((info) => info.isDirectory, () => false)) {
    throw microvmUnavailable(
      `the micro-VM image ${image} does not exist (SVC_WORKFLOW_MICROVM_QEMU_IMAGE); build it ` +
        "with: deno task microvm:image",
    );
  }
  for (const what of ["kernel", "initramfs", "rootfs"] as const) {
    const path = joinPath(image, QEMU_IMAGE_FILES[what]);
    const found = await p.stat(path).then((info) => info.isFile, () => false);
    if (!found) {
      throw microvmUnavailable(
        `the micro-VM image's ${what} ${path} is missing (SVC_WORKFLOW_MICROVM_QEMU_IMAGE); ` +
          "build the image with: deno task microvm:image",
      );
    }
  }
  return { qemu, image, accel: await hostAccel(settings.qemuAccel ?? "auto") };
}

/** The host's accelerator by setting, looked at once per process: the host does not change. */
const ACCEL = new Map<QemuAccelSetting, Promise<QemuAccelChoice>>();

/** {@linkcode chooseAccel} on this host, kept; a setting that failed closed is looked at again. */
export function hostAccel(setting: QemuAccelSetting): Promise<QemuAccelChoice> {
  let choice = ACCEL.get(setting);
  if (choice === undefined) {
    choice = chooseAccel(setting);
    choice.catch(() => ACCEL.delete(setting));
    ACCEL.set(setting, choice);
  }
  return choice;
}

/** QEMU's arguments for one VM of `plan` (see the module's description). */
export function qemuArgs(
  plan: QemuPlan,
  options: { memMb: number; cmdline: string },
): string[] {
  const file = (name: keyof typeof QEMU_IMAGE_FILES) =>
    joinPath(plan.image, QEMU_IMAGE_FILES[name]);
  return [
    // The PIT and PIC give the kernel a clock under emulation; the RTC saves seconds of timeouts.
    "-M",
    "microvm,x-option-roms=off,isa-serial=off,pit=on,pic=on,rtc=on",
    "-nodefaults",
    "-no-user-config",
    "-display",
    "none",
    "-no-reboot",
    "-m",
    String(options.memMb),
    "-smp",
    "1",
    ...accelArgs(plan.accel.accel),
    "-kernel",
    file("kernel"),
    "-initrd",
    file("initramfs"),
    "-append",
    options.cmdline,
    "-drive",
    `if=none,id=root,file=${file("rootfs")},format=raw,readonly=on`,
    "-device",
    "virtio-blk-device,drive=root",
    "-device",
    "virtio-serial-device",
    "-chardev",
    "null,id=console",
    "-device",
    "virtconsole,chardev=console",
    "-chardev",
    "stdio,id=io,signal=off",
    "-device",
    "virtserialport,chardev=io,name=svc.io",
    // The guest's stderr joins QEMU's own: both are what the host shows of this guest.
    "-chardev",
    "file,id=err,path=/dev/stderr,append=on",
    "-device",
    "virtserialport,chardev=err,name=svc.err",
  ];
}

/** The `qemu` backend on `/api/status`: whether a run could start, and how its VM would run. */
export async function describeQemu(settings: MicrovmSettings): Promise<IsolationReport> {
  try {
    const plan = await qemuPlan(settings);
    return {
      backend: "qemu",
      accel: plan.accel.accel,
      ready: true,
      note: plan.accel.accel === "tcg"
        ? `software emulation (TCG): ${plan.accel.reason}`
        : "KVM (hardware virtualisation)",
    };
  } catch (error) {
    const note = error instanceof Error ? error.message : String(error);
    return { backend: "qemu", accel: null, ready: false, note };
  }
}

function token(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `svc-exit-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * `qemu`: one VM per run. QEMU runs in a process group of its own, tied to the host's life (a
 * host that dies takes its VMs with it), and is killed and reaped when the run ends however it
 * ends; the slot is held until then.
 */
export async function spawnQemuGuest(
  request: GuestSpawnRequest,
  options: { settings: MicrovmSettings; slots: MicrovmSlots; bundle: () => Promise<GuestBundle> },
): Promise<GuestHandle> {
  const { settings, slots } = options;
  const plan = await qemuPlan(settings);
  const bundle = await options.bundle();
  const release = request.ahead
    ? slots.tryAcquire()
    : await slots.acquire({ signal: request.signal, onQueued: request.onQueued });
  if (release === undefined) {
    throw microvmUnavailable("every micro-VM slot is taken, so no VM is started ahead of need");
  }
  const exitToken = token();
  const args = qemuArgs(plan, {
    memMb: settings.qemuMemMb ?? request.heapMb + QEMU_DATA_HEADROOM_MB,
    cmdline: qemuKernelCmdline({
      heapMb: request.heapMb,
      seed: request.seed,
      cpuSeconds: request.cpuSeconds ?? 0,
      exitToken,
      tscKhz: plan.accel.tscKhz,
    }),
  });
  let child;
  try {
    child = platform().spawn(plan.qemu, {
      args,
      clearEnv: true,
      env: {},
      cwd: "/",
      newProcessGroup: true,
      lifeline: true,
    });
  } catch (error) {
    release();
    throw error;
  }
  sendBundle(child, bundle);
  const qemu = withVmExit(child, exitToken);
  let disposed: Promise<void> | undefined;
  const emulated = plan.accel.accel === "tcg";
  return {
    process: qemu,
    sandbox: {
      kind: "microvm",
      hardened: true,
      note: emulated
        ? `qemu: a VM of its own for this run, under software emulation (TCG): ${plan.accel.reason}`
        : "qemu: a VM of its own for this run, with KVM",
      accel: plan.accel.accel,
    },
    dispose() {
      disposed ??= (async () => {
        qemu.kill("SIGKILL");
        await settled(qemu, KILL_WAIT_MS);
        release();
      })();
      return disposed;
    },
  };
}
