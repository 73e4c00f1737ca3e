/**
 * Where svc keeps its data (`SVC_HOME`, by default `~/.svc`) and its configuration file.
 * @module
 */

export { configFile, svcHome } from "../host_env/mod.ts";
export { defaultConfig, loadConfig, type LoadedConfig } from "./load.ts";
export {
  type A2aProviderConfig,
  type AdmissionConfig,
  AdmissionConfigSchema,
  type AnthropicProviderConfig,
  type Config,
  ConfigSchema,
  type FakeProviderConfig,
  type FullSandboxPolicy,
  type HarnessProviderConfig,
  type HarnessType,
  type NotificationEndpointConfig,
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
