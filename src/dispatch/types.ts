import type { AgentOptions, JsonValue } from "../schemas/mod.ts";

/** Token usage of one call. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

/** One dispatch as a provider receives it. */
export interface DispatchRequest {
  prompt: string;
  options: AgentOptions;
  signal: AbortSignal;
}

/** What a provider returns: text, or a JSON value for schema calls, with its usage. */
export interface DispatchResult {
  output: JsonValue;
  usage: Usage;
  /** Cost in USD; null when unknown (unmetered), never a guessed zero. */
  cost_usd: number | null;
  provider: string;
  model: string | null;
}

/** A dispatch target: a harness, a model API, or the fake. */
export interface Provider {
  readonly name: string;
  dispatch(request: DispatchRequest): Promise<DispatchResult>;
}
