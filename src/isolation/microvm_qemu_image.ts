/**
 * The contract between the `qemu` backend and the image `deno task microvm:image` builds: the
 * files of the image directory, the paths inside the VM, the kernel command line's parameters,
 * and the init that runs the guest. The build script writes what this module says; the backend
 * reads it back, so that the two can never disagree.
 * @module
 */
import { GUEST_RUNTIME_FLAGS } from "./unsafe_local.ts";

/** Files of an image directory. */
export const QEMU_IMAGE_FILES = {
  /** The PVH-bootable ELF kernel, extracted from the packaged `vmlinuz`. */
  kernel: "vmlinux",
  /** The initramfs: busybox, the init and the virtio modules. */
  initramfs: "initramfs.cpio.gz",
  /** The read-only root given as a virtio-blk disk: Deno, its libraries, stage 0, the import map. */
  rootfs: "rootfs.squashfs",
  /** What the image was built from, its key, sizes and build time (JSON). */
  manifest: "manifest.json",
} as const;

/** Where Deno lies inside the VM's read-only root. */
export const QEMU_GUEST_DENO = "/usr/bin/deno";
/** Stage 0 of the guest inside the VM's root (guest/stage0.js). */
export const QEMU_GUEST_STAGE0 = "/svc/stage0.js";
/** The guest's import map inside the VM's root (the local tier's, see guest_imports.ts). */
export const QEMU_GUEST_IMPORT_MAP = "/svc/import_map.json";

/** The kernel modules the init loads, in dependency order, from the kernel's own package. */
export const QEMU_GUEST_MODULES: readonly string[] = [
  "virtio_ring",
  "virtio",
  "virtio_mmio",
  "virtio_console",
  "virtio_blk",
  "squashfs",
];

/** Address space beyond the V8 heap the guest may map (`ulimit -d`), as the local tier gives. */
export const QEMU_DATA_HEADROOM_MB = 768;

/** What a run passes to the init on the kernel command line. */
export interface QemuGuestParams {
  /** V8 heap cap in MiB. */
  heapMb: number;
  /** `--seed` of the guest. */
  seed: number;
  /** CPU seconds before SIGXCPU (a second more before SIGKILL); 0 for none. */
  cpuSeconds: number;
  /**
   * The token of the exit line: the init writes `<token> <status>` last on the stderr port, and
   * a script, which cannot read the kernel command line, cannot forge it.
   */
  exitToken: string;
  /** The TSC rate the kernel is told instead of calibrating it (software emulation); absent: none. */
  tscKhz?: number;
}

/** The kernel command line of one run: a quiet console, and the run's parameters for the init. */
export function qemuKernelCmdline(params: QemuGuestParams): string {
  return [
    "console=hvc0",
    "quiet",
    "loglevel=0",
    // The init's end (or a panic) reboots at once, and QEMU's -no-reboot turns that into an exit.
    "panic=-1",
    "reboot=t",
    ...(params.tscKhz ? [`tsc_early_khz=${Math.floor(params.tscKhz)}`, "tsc=reliable"] : []),
    `svc.heap=${Math.floor(params.heapMb)}`,
    `svc.seed=${Math.floor(params.seed)}`,
    `svc.cpu=${Math.max(0, Math.ceil(params.cpuSeconds))}`,
    `svc.exit=${params.exitToken}`,
  ].join(" ");
}

/**
 * The VM's `/init` (busybox sh as PID 1). It mounts devtmpfs and proc, loads the virtio modules,
 * mounts the read-only root, waits for the two virtio ports (a port's node appears a moment
 * before it opens), sets the local tier's limits, and runs Deno chrooted in that root with a
 * cleared environment, the local tier's flags and no permission flag: frames on the first port
 * (opened once: a port takes one opener, and closing it drops what the host sent), stderr on
 * the second. When Deno ends, it writes the exit line and reboots, which ends QEMU.
 */
export function qemuInitScript(): string {
  const flags = GUEST_RUNTIME_FLAGS.join(" ");
  const modules = QEMU_GUEST_MODULES.map((name) => `/lib/modules/${name}.ko`).join(" ");
  return `#!/bin/busybox sh
# svc micro-VM init, PID 1. Written by scripts/microvm_image.ts from src/isolation/microvm_qemu_image.ts.
export PATH=/bin
mount -t devtmpfs dev /dev
mount -t proc proc /proc
for m in ${modules}; do insmod "$m" || exit 1; done
heap=512; seed=1; cpu=0; token=none
for a in $(cat /proc/cmdline); do
  case "$a" in
    svc.heap=*) heap="\${a#svc.heap=}" ;;
    svc.seed=*) seed="\${a#svc.seed=}" ;;
    svc.cpu=*) cpu="\${a#svc.cpu=}" ;;
    svc.exit=*) token="\${a#svc.exit=}" ;;
  esac
done
umount /proc
mount -t sysfs sys /sys
# The ports by name (the device numbers follow the order the kernel probes them in).
io=; err=; n=0
until [ -b /dev/vda ] && [ -n "$io" ] && [ -n "$err" ]; do
  n=$((n + 1)); [ "$n" -gt 500 ] && reboot -f
  sleep 0.02
  for p in /sys/class/virtio-ports/*; do
    [ -e "$p/name" ] || continue
    case "$(cat "$p/name")" in
      svc.io) io="/dev/\${p##*/}" ;;
      svc.err) err="/dev/\${p##*/}" ;;
    esac
  done
done
umount /sys
mount -t squashfs -o ro /dev/vda /mnt || reboot -f
mount -t devtmpfs dev /mnt/dev
ulimit -f 0
ulimit -d $(((heap + ${QEMU_DATA_HEADROOM_MB}) * 1024))
# SIGXCPU at the soft limit names the cause; SIGKILL a second later makes sure.
if [ "$cpu" -gt 0 ]; then ulimit -S -t "$cpu"; ulimit -H -t $((cpu + 1)); fi
# The guest gets the ports as fds 3 and 4, opened once by the loop below. Closing a port throws
# away what the host had sent into it, so it is never opened to see whether it opens yet.
guest() {
  started=1
  env -i DENO_DIR=/dev/null DENO_NO_PACKAGE_JSON=1 DENO_NO_UPDATE_CHECK=1 NO_COLOR=1 \\
    chroot /mnt ${QEMU_GUEST_DENO} run ${flags} --seed="$seed" \\
    --v8-flags=--max-old-space-size="$heap" --import-map=${QEMU_GUEST_IMPORT_MAP} \\
    ${QEMU_GUEST_STAGE0} 0<&3 1>&3 2>&4 3>&- 4>&-
  status=$?
  printf '\\n%s %s\\n' "$token" "$status" >&4
}
started=0; n=0
while :; do
  # A port's node appears a moment before it opens (ENXIO): then the shell skips guest().
  guest 4>"$err" 3<>"$io" 2>/dev/null
  [ "$started" = 1 ] && break
  n=$((n + 1)); [ "$n" -gt 500 ] && reboot -f
  sleep 0.02
done
sync
reboot -f
`;
}
