import type { SandboxLevel } from "../schemas/mod.ts";

/** The sandbox level a call gets, and why it differs from what was asked, if it does. */
export interface SandboxAdmission {
  level: SandboxLevel;
  /** Why `full` was clamped to `write`; null when the call got what it asked for. */
  clamped: string | null;
}

/**
 * Kernel admission of a sandbox level. A call asks for `options.sandbox`, else the profile's,
 * else the run's `sandbox_default` (`read-only` by default). `full` is granted only when both
 * the run's `sandbox_default` (for a direct dispatch: its own request) and the server's
 * configuration allow it; otherwise it is clamped to `write`, with the reason recorded.
 */
export function admitSandbox(
  requested: SandboxLevel | undefined,
  context: { sandboxDefault?: SandboxLevel; allowFull: boolean },
): SandboxAdmission {
  const level = requested ?? context.sandboxDefault ?? "read-only";
  if (level !== "full") return { level, clamped: null };
  const runAllows = context.sandboxDefault === "full";
  if (runAllows && context.allowFull) return { level, clamped: null };
  const missing = [
    runAllows ? "" : "the run's sandbox_default is not full",
    context.allowFull ? "" : "the server configuration does not set sandbox.allow_full",
  ].filter(Boolean).join(" and ");
  return { level: "write", clamped: `full was clamped to write: ${missing}` };
}
