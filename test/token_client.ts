/** Requests to a served host (a dashboard's API) with one bearer token, as a client makes them. */
import assert from "node:assert/strict";

/** A client of one host with one token. */
export interface TokenClient {
  /** A request with the token. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** GET (or POST `body` as JSON), and the answer's status and JSON body. */
  json(path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Every item under `key` of a paged list. */
  all(path: string, key: string): Promise<Array<Record<string, unknown>>>;
}

/** `request`, `json` (GET, or POST with a body) and `all` (every item of a paged list). */
export function tokenClient(url: string, token: string): TokenClient {
  const request = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
  const json = async (path: string, body?: unknown) => {
    const response = await request(path, {
      method: body === undefined ? "GET" : "POST",
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: await response.json() as Record<string, unknown> };
  };
  /** Every item of a paged list. */
  const all = async (path: string, key: string) => {
    const items: Array<Record<string, unknown>> = [];
    let cursor: string | null = null;
    do {
      const separator = path.includes("?") ? "&" : "?";
      const page = await json(
        `${path}${separator}limit=200${cursor ? `&cursor=${cursor}` : ""}`,
      );
      assert.equal(page.status, 200, JSON.stringify(page.body));
      items.push(...page.body[key] as Array<Record<string, unknown>>);
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    return items;
  };
  return { request, json, all };
}
