/**
 * The qemu group (`bench_qemu.ts`): the microvm tier's `qemu` backend in real micro-VMs, where
 * its image exists; skipped with a note elsewhere.
 * @module
 */
import { measureQemu } from "../bench_qemu.ts";
import { summarize } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** The qemu group: a run's first call in a VM booted for it, and in one that was waiting. */
export async function reportQemu(report: Report, context: GroupContext): Promise<void> {
  if (!context.only.has("qemu")) return;
  const figures = await measureQemu(context.root, context.args.runs);
  if (figures === undefined) {
    console.error("bench: qemu group skipped: no micro-VM image (deno task microvm:image)");
    return;
  }
  report.baseline(
    "qemu_cold_first_call_ms",
    "baseline: qemu micro-VM run, start to first agent() (VM booted for it)",
    summarize(figures.coldMs),
    "ms",
  );
  report.figure(
    "qemu_warm_first_call_ms",
    "qemu micro-VM run, start to first agent(), a VM already waiting (long-lived host)",
    summarize(figures.warmMs),
    "ms",
    "qemu_cold_first_call_ms",
  );
  if (figures.rssMiB.length > 0) {
    report.part(
      "qemu_vm_rss_mib",
      "resident memory of one booted qemu micro-VM waiting for its run",
      summarize(figures.rssMiB),
      "MiB",
    );
  }
}
