/**
 * The page's client of the public `/api/*` routes: what the page does, a curl client can do.
 * The token goes in the `Authorization` header only, never in a URL.
 */

const TOKEN_KEY = "svc.dashboard.token";

/** An error the API answered (its `{error: {status, code, message}}` object), or no answer. */
export class ApiError extends Error {
  /**
   * @param {number} status HTTP status; 0 when the server could not be reached
   * @param {string} code the API's machine code
   * @param {string} message what went wrong, from the server
   */
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** The token this tab keeps (session storage: it ends with the tab), or "". */
export function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

/** Keeps `token` for this tab; "" forgets it. */
export function storeToken(token) {
  try {
    if (token === "") sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage may be off: the token then lasts until the page reloads.
  }
}

/**
 * Takes a token from the start-up URL's `#token=...` fragment (which the browser never sends
 * to the server) and removes it from the address bar and the history.
 * @returns {string | undefined}
 */
export function tokenFromFragment() {
  const match = /^#token=([^&]*)/.exec(location.hash);
  if (!match) return undefined;
  history.replaceState(null, "", `${location.pathname}${location.search}#/runs`);
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return undefined;
  }
}

/** Reads an error object from a response, whatever the server sent. */
export async function errorOf(response) {
  let body;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const error = body && typeof body === "object" ? body.error : undefined;
  if (error && typeof error.message === "string") {
    return new ApiError(response.status, String(error.code ?? "error"), error.message);
  }
  return new ApiError(response.status, "error", `The server answered ${response.status}`);
}

/** A client of the API with one token. */
export class Api {
  /** @param {string} token the bearer token ("" when the server needs none) */
  constructor(token) {
    this.token = token;
  }

  /** Request headers: the token and any extra ones. */
  headers(extra = {}) {
    const headers = { ...extra };
    if (this.token !== "") headers.authorization = `Bearer ${this.token}`;
    return headers;
  }

  /**
   * A JSON request; resolves to the parsed body, throws an ApiError.
   * @param {string} path an `/api/...` path with its query
   * @param {{method?: string, body?: unknown, signal?: AbortSignal}} [options]
   */
  async json(path, options = {}) {
    const init = {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers: this.headers(
        options.body === undefined ? {} : { "content-type": "application/json" },
      ),
      cache: "no-store",
      signal: options.signal,
    };
    if (options.body !== undefined) init.body = JSON.stringify(options.body);
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new ApiError(0, "unreachable", "Cannot reach the svc server: is it running?");
    }
    if (!response.ok) throw await errorOf(response);
    if (response.status === 204) return undefined;
    return await response.json();
  }
}
