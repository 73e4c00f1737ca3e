import type { Config, ProviderConfig } from "../config/mod.ts";
import { a2aAgentProvider, anthropicProvider, openaiCompatibleProvider } from "./api/mod.ts";
import { createDispatcher, type Dispatcher, type DispatcherOptions } from "./dispatcher.ts";
import { claudeProvider, codexProvider, geminiProvider, opencodeProvider } from "./harness/mod.ts";
import type { Provider } from "./types.ts";
import type { ModelAliases } from "./model_aliases.ts";

/**
 * Builds the provider a configuration entry describes; `fake` is always registered anyway.
 * Harness calls without a working directory get scratch directories under `scratchRoot`.
 */
export function providerFromConfig(
  name: string,
  settings: ProviderConfig,
  options: { scratchRoot?: string; sessionRoot?: string } = {},
): Provider | undefined {
  switch (settings.type) {
    case "fake":
      return undefined;
    case "openai":
      return openaiCompatibleProvider({
        name,
        baseUrl: settings.base_url,
        apiKeyEnv: settings.api_key_env,
        model: settings.model,
        stream: settings.stream,
        timeoutMs: settings.timeout_ms,
        ...(settings.reasoning_effort !== undefined
          ? { reasoningEffort: settings.reasoning_effort }
          : {}),
        ...(settings.model_aliases ? { modelAliases: settings.model_aliases } : {}),
      });
    case "anthropic":
      return anthropicProvider({
        name,
        model: settings.model,
        ...(settings.base_url ? { baseUrl: settings.base_url } : {}),
        ...(settings.api_key_env ? { apiKeyEnv: settings.api_key_env } : {}),
        stream: settings.stream,
        maxTokens: settings.max_tokens,
        timeoutMs: settings.timeout_ms,
        ...(settings.thinking !== undefined ? { thinking: settings.thinking } : {}),
        ...(settings.model_aliases ? { modelAliases: settings.model_aliases } : {}),
      });
    case "a2a":
      return a2aAgentProvider({
        name,
        url: settings.url,
        ...(settings.token_env !== undefined ? { tokenEnv: settings.token_env } : {}),
      });
    case "claude":
    case "codex":
    case "gemini":
    case "opencode":
      return HARNESSES[settings.type]({
        name,
        command: settings.command,
        model: settings.model,
        timeoutMs: settings.timeout_ms,
        extraArgs: settings.extra_args,
        passEnv: settings.pass_env,
        env: settings.env,
        ...(settings.base_url !== undefined ? { baseUrl: settings.base_url } : {}),
        scratchRoot: options.scratchRoot,
        sessionRoot: options.sessionRoot,
        ...(settings.model_aliases ? { modelAliases: settings.model_aliases } : {}),
      });
  }
}

type HarnessFactory = (options: {
  name: string;
  command?: string;
  model?: string;
  timeoutMs?: number;
  extraArgs?: string[];
  passEnv?: readonly string[];
  env?: Readonly<Record<string, string>>;
  baseUrl?: string;
  scratchRoot?: string;
  sessionRoot?: string;
  modelAliases?: ModelAliases;
}) => Provider;

const HARNESSES: Record<"claude" | "codex" | "gemini" | "opencode", HarnessFactory> = {
  claude: claudeProvider,
  codex: codexProvider,
  gemini: geminiProvider,
  opencode: opencodeProvider,
};

/**
 * The dispatcher of a configuration: its providers, profiles, routing, prices and limits.
 * Harness scratch directories go under `scratchRoot` (the composition root gives
 * `$SVC_HOME/tmp` when {@linkcode hasHarnessProvider} says some provider needs one); `env` is how
 * the host's environment is read (see {@linkcode DispatcherOptions.env}).
 */
export function dispatcherFromConfig(
  config: Config,
  options: Pick<DispatcherOptions, "worktrees" | "env"> & { scratchRoot?: string } = {},
): Dispatcher {
  const { scratchRoot, ...rest } = options;
  const providers = Object.entries(config.providers)
    .map(([name, settings]) => providerFromConfig(name, settings, { scratchRoot }))
    .filter((provider): provider is Provider => provider !== undefined);
  return createDispatcher({ config, providers, ...rest });
}

/** Whether some configured provider is a harness: harnesses need a scratch directory. */
export function hasHarnessProvider(config: Config): boolean {
  return Object.values(config.providers)
    .some((settings) => !["fake", "openai", "anthropic", "a2a"].includes(settings.type));
}
