/**
 * The microvm group: the stand-in microVM guests' start (`bench_microvm.ts`), against a bare
 * guest.
 * @module
 */
import type { GroupContext, Report } from "./report.ts";

/** The microvm group: the stand-in microVM guests' start against a bare guest. */
export function reportMicrovm(report: Report, context: GroupContext): void {
  if (context.only.has("microvm")) {
    report.baseline(
      "bare_guest_ms",
      "baseline: bare guest-like deno run (empty file)",
      // Already set by the start group when it ran; else not measured.
      report.pick("bareGuestMs"),
      "ms",
    );
    report.figure(
      "microvm_stand_in_lima_ms",
      "stand-in microVM guest start, backend_a (limactl list + shell)",
      report.pick("microvmLimaMs"),
      "ms",
      "bare_guest_ms",
    );
    report.figure(
      "microvm_stand_in_krunvm_ms",
      "stand-in microVM guest start, backend_b (krunvm create/start/delete)",
      report.pick("microvmKrunvmMs"),
      "ms",
      "bare_guest_ms",
    );
  }
}
