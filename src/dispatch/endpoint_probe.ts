/**
 * Whether a model endpoint answers a provider's credentials, asked the cheapest way there is: its
 * model list (`GET /v1/models`, Gemini's `GET /v1beta/models`), which spends no tokens. Answers
 * are kept for a while and a probe under way is shared. Nothing of the key is ever repeated: an
 * answer is its HTTP status and the number of models, never the body.
 * @module
 */
import { platform } from "../platform/mod.ts";

/** The wire format whose model list is asked for. */
export type EndpointWire = "anthropic" | "openai" | "gemini" | "a2a";

/** One probe: where, how, and with which key. */
export interface EndpointProbeRequest {
  wire: EndpointWire;
  /** The endpoint's base URL as configured (or the tool's default). */
  base: string;
  /** The key to send, with the NAME of the variable it came from; none to probe without. */
  key?: { name: string; value: string };
  /** Longest the endpoint may take to answer. */
  timeoutMs: number;
}

/** What a probe found. */
export interface EndpointAnswer {
  state: "ok" | "refused" | "unreachable" | "failed";
  /** The URL asked, without credentials or query. */
  endpoint: string;
  detail: string;
}

/** The URL of a wire format's model list (or an agent's card) under `base`. */
export function modelListUrl(wire: EndpointWire, base: string): URL {
  const url = new URL(base);
  const path = url.pathname.replace(/\/+$/, "");
  if (wire === "gemini") url.pathname = `${path}/v1beta/models`;
  else if (wire === "a2a") url.pathname = "/.well-known/agent-card.json";
  else if (wire === "openai" && /\/v\d+$/.test(path)) url.pathname = `${path}/models`;
  else url.pathname = `${path}/v1/models`;
  url.search = "";
  url.hash = "";
  return url;
}

/** `url` as it may be shown: no user, password, query or fragment. */
export function shownUrl(url: URL): string {
  const shown = new URL(url.href);
  shown.username = "";
  shown.password = "";
  shown.search = "";
  shown.hash = "";
  return shown.href;
}

function headersOf(request: EndpointProbeRequest): Record<string, string> {
  const key = request.key?.value;
  if (key === undefined) return {};
  switch (request.wire) {
    case "anthropic":
      return { "x-api-key": key, "anthropic-version": "2023-06-01" };
    case "gemini":
      return { "x-goog-api-key": key };
    default:
      return { authorization: `Bearer ${key}` };
  }
}

/** How many models a model list names, when its body reads as one. */
async function countModels(response: Response): Promise<number | undefined> {
  const text = await response.text();
  if (text.length > 4 * 1024 * 1024) return undefined;
  try {
    const body = JSON.parse(text) as { data?: unknown; models?: unknown };
    const list = Array.isArray(body.data) ? body.data : body.models;
    return Array.isArray(list) ? list.length : undefined;
  } catch {
    return undefined;
  }
}

/** Asks the endpoint once; never throws. */
async function ask(request: EndpointProbeRequest): Promise<EndpointAnswer> {
  let url: URL;
  try {
    url = modelListUrl(request.wire, request.base);
  } catch {
    return { state: "failed", endpoint: "", detail: "the configured URL cannot be read" };
  }
  const endpoint = shownUrl(url);
  const seconds = `${Number((request.timeoutMs / 1000).toFixed(1))} s`;
  try {
    const response = await fetch(url, {
      headers: headersOf(request),
      redirect: "manual",
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    const how = request.key ? `with ${request.key.name}` : "without a key";
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      return { state: "refused", endpoint, detail: `refused ${how}: HTTP ${response.status}` };
    }
    if (!response.ok) {
      await response.body?.cancel();
      return { state: "failed", endpoint, detail: `answered ${how}: HTTP ${response.status}` };
    }
    const models = request.wire === "a2a" ? undefined : await countModels(response);
    if (request.wire === "a2a") await response.body?.cancel();
    const count = models === undefined ? "" : `, ${models} ${models === 1 ? "model" : "models"}`;
    return { state: "ok", endpoint, detail: `answered ${how}: HTTP ${response.status}${count}` };
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === "TimeoutError";
    const grant = platform().missingGrant(error);
    return {
      state: "unreachable",
      endpoint,
      detail: timedOut
        ? `no answer within ${seconds}`
        : grant
        ? `svc needs ${grant}`
        : "cannot connect",
    };
  }
}

/** Default time an endpoint's answer is kept. */
export const ENDPOINT_PROBE_TTL_MS = 60_000;

/** Endpoint probes with their answers kept for a while, a probe under way shared. */
export class EndpointProbes {
  readonly #answers = new Map<string, { at: number; answer: Promise<EndpointAnswer> }>();
  readonly #ttl: number;
  readonly #now: () => number;

  constructor(options: { ttlMs?: number; now?: () => number } = {}) {
    this.#ttl = options.ttlMs ?? ENDPOINT_PROBE_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The endpoint's answer: a kept one, the one under way, or a fresh probe's. */
  probe(request: EndpointProbeRequest): Promise<EndpointAnswer> {
    // The key's value never becomes part of the cache key: its name and length tell changes apart.
    const id = [request.wire, request.base, request.key?.name, request.key?.value.length].join(
      "\u0000",
    );
    const kept = this.#answers.get(id);
    if (kept && this.#now() - kept.at < this.#ttl) return kept.answer;
    const answer = ask(request);
    this.#answers.set(id, { at: this.#now(), answer });
    return answer;
  }
}
