/**
 * What the host process reads from its environment before anything else: the data directory,
 * the configuration file's path, and the names of the variables it passes to harnesses and to
 * the microVM tier. Light on purpose (no npm package, no other subsystem but errors and
 * platform): the launcher (`cli/launch.ts`) computes the host's grants from it in a few ms.
 * @module
 */
export { configFile, svcHome } from "./home.ts";
export { type EnvReader, GUEST_ENV_VARS, hostEnv, snapshotEnv } from "./read_env.ts";
export { LEDGER_ENV_VARS, ledgerNetGrant, ledgerUrl } from "./ledger_url.ts";
export { HARNESS_BASE_ENV, HARNESS_KEY_ENV, LOCALE_ENV } from "./harness_env_names.ts";
export {
  MICROVM_ENV_VARS,
  MICROVM_TOOLS,
  type MicrovmBackendName,
  microvmBackendName,
  microvmUnavailable,
  shown,
} from "./microvm_env.ts";
