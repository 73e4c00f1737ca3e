/**
 * Pieces every route definition uses: JSON and event-stream content, the error responses of
 * the OpenAPI document, and the cursor of a page.
 * @module
 */
import type { TypedResponse } from "hono";
import * as z from "zod";
import { ApiErrorSchema } from "./schemas.ts";

/** JSON content of `schema`, for a request body or a response. */
export function jsonContent<T extends z.ZodType>(schema: T): {
  "application/json": { schema: T };
} {
  return { "application/json": { schema } };
}

/** Server-sent-event content. */
export function sseContent(): { "text/event-stream": { schema: z.ZodString } } {
  return {
    "text/event-stream": {
      schema: z.string().meta({
        description: "events with `id:`, `event:` and one line of JSON `data:`",
      }),
    },
  };
}

const MEANINGS: Record<number, string> = {
  400: "the request is malformed: the message names the field",
  401: "no valid bearer token",
  403: "origin not allowed, or token bound to no owner where owners are required",
  404: "no such id (another owner's answers the same)",
  409: "the state does not allow the action",
  413: "the body is too large",
  429: "a cap of the host or of the caller's owner is reached",
  503: "a provider or backend is not available",
};

/**
 * The error responses of a route, in the API error shape. 401, 403 and 413 are added to
 * every route: the security layer and the body reader answer them before any handler.
 */
export function errors(
  ...statuses: number[]
): Record<number, { description: string; content: ReturnType<typeof jsonContent> }> {
  const out: Record<number, { description: string; content: ReturnType<typeof jsonContent> }> = {};
  for (const status of new Set([...statuses, 401, 403, 413])) {
    out[status] = {
      description: MEANINGS[status] ?? "error",
      content: jsonContent(ApiErrorSchema),
    };
  }
  return out;
}

/** The cursor of the page after `items`: the last item's id, or null when the page was not full. */
export function nextCursor<T>(
  items: readonly T[],
  limit: number,
  idOf: (item: T) => string,
): string | null {
  const last = items.at(-1);
  return items.length >= limit && last !== undefined ? idOf(last) : null;
}

/**
 * A JSON answer whose text a service already holds (an ended run's status, kept as the ledger
 * holds it): sent as it is, typed as the route's JSON response, without a parse and a
 * serialisation per request.
 */
export function jsonText<T>(text: string): Response & TypedResponse<T, 200, "json"> {
  return new Response(text, {
    status: 200,
    headers: { "content-type": "application/json" },
  }) as Response & TypedResponse<T, 200, "json">;
}
