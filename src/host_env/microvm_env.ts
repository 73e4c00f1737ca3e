/**
 * The environment of the `microvm` tier that the host is granted: its variables, the tool each
 * backend drives, and which backend `SVC_WORKFLOW_MICROVM_BACKEND` selects.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";
import type { EnvReader } from "./read_env.ts";

/**
 * The microVM backends: `backend_a` is Lima (a resident VM), `backend_b` krunvm (one VM per run),
 * `qemu` QEMU's `microvm` machine (one VM per run, from Debian's packages and svc's own image).
 */
export type MicrovmBackendName = "backend_a" | "backend_b" | "qemu";

/** The environment variables of the `microvm` tier, which the host is granted. */
export const MICROVM_ENV_VARS: readonly string[] = [
  "SVC_WORKFLOW_MICROVM_BACKEND",
  "SVC_WORKFLOW_MICROVM_GUEST_DENO",
  "SVC_WORKFLOW_MICROVM_MAX_CONCURRENT",
  "SVC_WORKFLOW_MICROVM_LIMA_INSTANCE",
  "SVC_WORKFLOW_MICROVM_KRUNVM_IMAGE",
  "SVC_WORKFLOW_MICROVM_KRUNVM_MEM_MB",
  "SVC_WORKFLOW_MICROVM_QEMU_IMAGE",
  "SVC_WORKFLOW_MICROVM_QEMU_MEM_MB",
  "SVC_WORKFLOW_MICROVM_QEMU_ACCEL",
];

/** The executable each backend drives on the host. */
export const MICROVM_TOOLS: Record<MicrovmBackendName, string> = {
  backend_a: "limactl",
  backend_b: "krunvm",
  qemu: "qemu-system-x86_64",
};

/** The error of an unavailable microVM backend: names what is missing, says nothing ran. */
export function microvmUnavailable(reason: string): SvcError {
  return new SvcError(
    "isolation_unavailable",
    `Cannot start the run in microvm isolation: ${reason}; the script was not run ` +
      "(svc never falls back to local execution)",
  );
}

/** An operator's value as an error may show it: clipped, printable ASCII only. */
export function shown(raw: string, max: number): string {
  return raw.slice(0, max).replace(/[^\x20-\x7e]/g, "?");
}

/** The backend `SVC_WORKFLOW_MICROVM_BACKEND` selects; an unknown value is refused, never guessed. */
export function microvmBackendName(
  env: EnvReader = (name) => platform().env(name),
): MicrovmBackendName {
  const raw = env("SVC_WORKFLOW_MICROVM_BACKEND");
  if (raw === undefined || raw === "" || raw === "backend_a") return "backend_a";
  if (raw === "backend_b" || raw === "qemu") return raw;
  throw microvmUnavailable(
    `SVC_WORKFLOW_MICROVM_BACKEND is '${
      shown(raw, 40)
    }', which is no backend: use backend_a (Lima), backend_b (krunvm) or qemu`,
  );
}
