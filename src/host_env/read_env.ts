/**
 * The host's environment as the services read it: by name, at the moment a value is needed.
 * Below the composition root, no module calls the platform's `env()` itself: it asks here, so
 * that every variable svc reads is found in this folder.
 * @module
 */
import { platform } from "../platform/mod.ts";

/**
 * One variable svc forwards or checks by name (PATH and HOME for a child process, a provider's
 * key variable, a webhook's secret). Throws as the platform does when the host may not read it:
 * callers that must say which grant is missing catch that.
 */
export function hostEnv(name: string): string | undefined {
  return platform().env(name);
}

/** `SVC_DENO`: the Deno binary guests run with, when the operator names one. */
export function guestDenoEnv(): string | undefined {
  return platform().env("SVC_DENO");
}

/**
 * `SVC_WORKFLOW_SANDBOX`: how the local tier confines guests. Read per guest, so that a wrong
 * value fails that run clearly rather than the host's start.
 */
export function workflowSandboxEnv(): string | undefined {
  return platform().env("SVC_WORKFLOW_SANDBOX");
}
