/**
 * Where svc keeps its data (`SVC_HOME`, by default `~/.svc`) and its configuration file.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";

/** The data directory: `SVC_HOME`, else `~/.svc`. */
export function svcHome(): string {
  const p = platform();
  const explicit = p.env("SVC_HOME");
  if (explicit) return explicit;
  const home = p.homeDir();
  if (!home) {
    throw new SvcError(
      "invalid_argument",
      "Cannot locate the data directory: set SVC_HOME or HOME",
    );
  }
  return joinPath(home, ".svc");
}

export { defaultConfig, loadConfig, type LoadedConfig } from "./load.ts";
export {
  type A2aProviderConfig,
  type AnthropicProviderConfig,
  type Config,
  ConfigSchema,
  type FakeProviderConfig,
  type FullSandboxPolicy,
  type HarnessProviderConfig,
  type HarnessType,
  type OpenAIProviderConfig,
  type PriceConfig,
  type ProfileConfig,
  type ProfileSchema,
  type ProviderConfig,
  ProviderConfigSchema,
  type ProviderSettings,
  WEBHOOK_BODY_LIMIT,
  type WebhookConfig,
} from "./schema.ts";
