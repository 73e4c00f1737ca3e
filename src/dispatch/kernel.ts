import type { FullSandboxPolicy } from "../config/mod.ts";
import { sandboxAbove, type SandboxLevel } from "../schemas/mod.ts";

/** The sandbox level a call gets, and why it differs from what was asked, if it does. */
export interface SandboxAdmission {
  /** The level the call gets (once approved, when `needsApproval`). */
  level: SandboxLevel;
  /** Why the level asked for was lowered; null when the call got what it asked for. */
  clamped: string | null;
  /**
   * Present (true) when the level is `full` under `sandbox.full: "ask"` and no person has
   * approved it yet: the caller must wait for an approval before the call may be dispatched.
   */
  needsApproval?: true;
}

/** Who decides a call's sandbox level besides the call itself. */
export interface SandboxPolicy {
  /** Level of calls that ask for none: the run's `sandbox_default`, or a dispatch's own request. */
  sandboxDefault?: SandboxLevel;
  /** Highest level any call may get (`sandbox_max`); the default level when absent. */
  sandboxMax?: SandboxLevel;
  /** The server configuration's `sandbox.full`. */
  full: FullSandboxPolicy;
  /** A person approved this call's `full` (under `ask`). */
  approved?: boolean;
  /**
   * The call comes from a script run in `microvm` isolation: one kept out of the host because it
   * is not trusted, so `full` (the agent may do anything on the host) is clamped once more.
   */
  microvm?: boolean;
}

/**
 * Kernel admission of a sandbox level. A call asks for `options.sandbox`, else the profile's,
 * else the default (`read-only` unless the run or dispatch says otherwise). Whatever it asks,
 * it gets at most the ceiling: `sandbox_max`, which defaults to the default level, so that a
 * run started `read-only` hands out read-only agents only. `full` is then up to the server's
 * `sandbox.full`: `deny` makes it `write`, `allow` grants it, `ask` grants it only once a person
 * approved the call (`needsApproval` until then). The ceiling applies first: a run whose ceiling
 * is `write` never asks. Every lowering is explained.
 */
export function admitSandbox(
  requested: SandboxLevel | undefined,
  policy: SandboxPolicy,
): SandboxAdmission {
  const asked = requested ?? policy.sandboxDefault ?? "read-only";
  const ceiling = policy.sandboxMax ?? policy.sandboxDefault ?? "read-only";
  if (sandboxAbove(asked, ceiling)) {
    // Nothing is above full, so the ceiling here is write or read-only: no sandbox.full question.
    const source = policy.sandboxMax === undefined
      ? "the default level; sandbox_max raises it"
      : "sandbox_max";
    return {
      level: ceiling,
      clamped: `${asked} was clamped to ${ceiling}: the ceiling is ${ceiling} (${source})`,
    };
  }
  // The second clamp of the specification: whatever the server's sandbox.full or a person says.
  if (asked === "full" && policy.microvm === true) {
    return {
      level: "write",
      clamped: "full was clamped to write: the run's script is in microvm isolation, and full " +
        "would hand its agents the host it is kept out of",
    };
  }
  if (asked === "full" && policy.full === "deny") {
    return {
      level: "write",
      clamped: "full was clamped to write: the server configuration's sandbox.full is deny",
    };
  }
  if (asked === "full" && policy.full === "ask" && policy.approved !== true) {
    return { level: "full", clamped: null, needsApproval: true };
  }
  return { level: asked, clamped: null };
}
