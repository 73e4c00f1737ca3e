/**
 * A fake provider that records the requests it gets, for tests of routing and dispatch: each
 * test names what differs (kind, aliases, availability, answer) and keeps the rest.
 * @module
 */
import type {
  Availability,
  DispatchRequest,
  DispatchResult,
  ModelAliases,
  Provider,
} from "../src/dispatch/mod.ts";

/** Options of {@linkcode recordingProvider}. */
export interface RecordingProviderOptions {
  /** Its kind. Default `harness`. */
  kind?: Provider["kind"];
  /** Claude aliases it serves; none when absent. */
  modelAliases?: ModelAliases;
  /** What its probe answers. Default available. */
  availability?: Availability;
  /**
   * The answer to a request, given the requests so far (this one included). Default: the
   * provider's name and the prompt as output, one token each way, no cost, the requested model.
   */
  answer?: (request: DispatchRequest, requests: DispatchRequest[]) => Promise<DispatchResult>;
}

/** A recording provider: its `requests` are the requests it got, in order. */
export type RecordingProvider = Provider & { requests: DispatchRequest[] };

/** A provider named `name` that records every request it gets, then answers as `options` say. */
export function recordingProvider(
  name: string,
  options: RecordingProviderOptions = {},
): RecordingProvider {
  const requests: DispatchRequest[] = [];
  const availability = options.availability ?? { available: true, reason: "ok" };
  const answer = options.answer ?? ((request: DispatchRequest) =>
    Promise.resolve({
      output: `${name}: ${request.prompt}`,
      usage: { input_tokens: 1, output_tokens: 1 },
      cost_usd: 0,
      provider: name,
      model: request.model ?? null,
    }));
  return {
    name,
    kind: options.kind ?? "harness",
    requests,
    ...(options.modelAliases ? { modelAliases: options.modelAliases } : {}),
    probe: () => Promise.resolve(availability),
    dispatch(request) {
      requests.push(request);
      return answer(request, requests);
    },
  };
}
