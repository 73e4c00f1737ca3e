import { SvcError } from "../errors/mod.ts";
import type { GuestHandle, IsolationBackend } from "./types.ts";

/**
 * The `microvm` tier. No microVM backend ships yet, so it fails closed: every spawn is refused
 * with an error, and nothing ever falls back to running the script locally.
 */
export function createMicrovmBackend(): IsolationBackend {
  return {
    name: "microvm",
    spawn(): Promise<GuestHandle> {
      return Promise.reject(
        new SvcError(
          "isolation_unavailable",
          "Cannot start the run in microvm isolation: no microVM backend is available on this host; " +
            "the script was not run (svc never falls back to local execution)",
        ),
      );
    },
  };
}
