/**
 * The environment of a harness process: never the host's whole environment (which holds every
 * other provider's key and the user's cloud credentials), but an allow-list: what any tool needs
 * to run, the provider's own key variables, and fixed values from the configuration.
 * @module
 */
import { SvcError } from "../../errors/mod.ts";
import { platform } from "../../platform/mod.ts";

export { HARNESS_BASE_ENV, HARNESS_KEY_ENV, LOCALE_ENV } from "../../host_env/mod.ts";
import { HARNESS_BASE_ENV, hostEnv } from "../../host_env/mod.ts";

/** The environment of one harness process, and the values an error message must never show. */
export interface HarnessEnv {
  env: Record<string, string>;
  /** The values of the key variables and of the configured fixed values. */
  secrets: string[];
}

/** Reads a variable; a refused read is `refused` (the grant it needs), not an exception. */
function read(name: string): { value?: string; refused?: string } {
  try {
    const value = hostEnv(name);
    return value === undefined ? {} : { value };
  } catch (error) {
    const grant = platform().missingGrant(error);
    if (grant) return { refused: grant };
    throw error;
  }
}

/**
 * Builds a harness's environment: {@linkcode HARNESS_BASE_ENV} where set (skipped where the
 * host may not read it), the key variables `pass` names (a refused read fails the call: the
 * tool would otherwise report a confusing "not authenticated"), the tool's defaults, then the
 * fixed values.
 */
export function harnessEnv(
  provider: string,
  options: {
    pass: readonly string[];
    fixed?: Readonly<Record<string, string>>;
    /** The tool's own defaults: not secrets, and the fixed values win over them. */
    defaults?: Readonly<Record<string, string>>;
  },
): HarnessEnv {
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  for (const name of HARNESS_BASE_ENV) {
    const { value } = read(name);
    if (value !== undefined) env[name] = value;
  }
  for (const name of options.pass) {
    const { value, refused } = read(name);
    if (refused) {
      throw new SvcError("provider_failed", `Cannot dispatch to ${provider}: svc needs ${refused}`);
    }
    if (value === undefined) continue;
    env[name] = value;
    secrets.push(value);
  }
  Object.assign(env, options.defaults);
  for (const [name, value] of Object.entries(options.fixed ?? {})) {
    env[name] = value;
    secrets.push(value);
  }
  return { env, secrets };
}
