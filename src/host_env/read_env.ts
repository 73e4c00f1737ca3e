/**
 * The host's environment as svc reads it: settings in a snapshot the composition root takes
 * once ({@linkcode snapshotEnv}), and the variables passed on to a child process by name when
 * it starts ({@linkcode hostEnv}). Below the composition root, no module calls the platform's
 * `env()` itself: it asks here, so that every variable svc reads is found in this folder.
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

/** Reads one variable by name: {@linkcode hostEnv}, or a snapshot the composition root took. */
export type EnvReader = (name: string) => string | undefined;

/**
 * The named variables as they are now, read once: what the composition root hands down, so that
 * a service below it reads its settings from the snapshot and never from the host itself. A
 * variable the host may not read counts as unset.
 */
export function snapshotEnv(names: readonly string[]): EnvReader {
  const values = new Map<string, string>();
  for (const name of names) {
    let value: string | undefined;
    try {
      value = platform().env(name);
    } catch {
      value = undefined;
    }
    if (value !== undefined) values.set(name, value);
  }
  return (name) => values.get(name);
}

/** The variables of the isolation tiers beside the microVM's: the guests' Deno and the sandbox. */
export const GUEST_ENV_VARS: readonly string[] = ["SVC_DENO", "SVC_WORKFLOW_SANDBOX"];
