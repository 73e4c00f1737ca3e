/**
 * A configured base URL for opencode: opencode reads no endpoint variable, but it merges inline
 * configuration from `OPENCODE_CONFIG_CONTENT` over the user's own files (global, project and
 * `OPENCODE_CONFIG`), so svc points the call's model provider at the URL there and touches no
 * file of the user's.
 * @module
 */
import { SvcError } from "../../errors/mod.ts";

/**
 * A provider id as opencode's catalog spells them (`anthropic`, `deepseek`, `my-gateway`). The
 * model part may hold more slashes (`openrouter/openai/gpt-5`) but no braces: opencode expands
 * `{env:NAME}` and `{file:path}` in configuration text, and a script's model name must not make
 * it read a variable or a file.
 */
const MODEL = /^([A-Za-z0-9][A-Za-z0-9._-]*)\/([^\s{}]+)$/;

/** A model name split into opencode's provider id and model id. */
export interface OpencodeModel {
  provider: string;
  model: string;
}

/**
 * Splits `provider/model`; anything else is refused, because with a base URL svc must know which
 * provider to point at it. `name` is the svc provider's name, for the message.
 */
export function opencodeModel(name: string, model: string | undefined): OpencodeModel {
  const match = model === undefined ? null : MODEL.exec(model);
  const [provider, id] = [match?.[1], match?.[2]];
  if (provider === undefined || id === undefined) {
    throw new SvcError(
      "invalid_request",
      `Cannot dispatch to ${name}: with a base_url the model must be named provider/model ${
        model === undefined ? "(none was given)" : `(got ${JSON.stringify(model.slice(0, 80))})`
      }`,
    );
  }
  return { provider, model: id };
}

/**
 * The inline configuration that sends one call to `baseUrl`: the model's provider gets
 * `options.baseURL` and declares the model. A provider opencode's catalog knows keeps its
 * package, key variable and prices (the entries merge); any other id becomes an
 * OpenAI-compatible provider (`POST <baseUrl>/chat/completions`), priced only where the user's
 * own configuration declares the model's `cost`.
 */
export function opencodeEndpointConfig(baseUrl: string, target: OpencodeModel): string {
  return JSON.stringify({
    provider: {
      [target.provider]: {
        options: { baseURL: baseUrl },
        models: { [target.model]: {} },
      },
    },
  });
}

/** Refuses a base URL that is not http or https (it reaches opencode's configuration). */
export function checkOpencodeBaseUrl(baseUrl: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(baseUrl).protocol;
  } catch {
    protocol = undefined;
  }
  if ((protocol !== "http:" && protocol !== "https:") || /[{}]/.test(baseUrl)) {
    throw new SvcError(
      "invalid_request",
      `Cannot create the opencode provider: base_url ${
        JSON.stringify(baseUrl)
      } is not an http or https URL without braces`,
    );
  }
}
