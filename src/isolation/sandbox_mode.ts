/**
 * `SVC_WORKFLOW_SANDBOX`: whether local guests run inside the OS sandbox (bubblewrap on Linux,
 * the sandbox-exec deny-list on macOS). `auto` (the default) uses it where it is available and
 * says so in the run's status; `on` refuses to start a guest without it; `off` runs a plain
 * subprocess.
 * @module
 */
import { SvcError } from "../errors/mod.ts";

/** The values of `SVC_WORKFLOW_SANDBOX`. */
export type SandboxMode = "auto" | "on" | "off";

/** Reads `SVC_WORKFLOW_SANDBOX` (absent or empty: `auto`); any other value is refused. */
export function parseSandboxMode(value: string | undefined): SandboxMode {
  if (value === undefined || value === "") return "auto";
  const mode = value.trim().toLowerCase();
  if (mode === "auto" || mode === "on" || mode === "off") return mode;
  throw new SvcError(
    "invalid_argument",
    `Cannot start the guest: SVC_WORKFLOW_SANDBOX is ${
      JSON.stringify(value.slice(0, 40))
    }; it must be auto, on or off`,
  );
}

/** What confined a guest, as the run's status reports it (`guest_sandbox`). */
export type { GuestSandbox } from "../ledger/mod.ts";
