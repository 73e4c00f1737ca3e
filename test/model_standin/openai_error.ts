/**
 * OpenAI's error answer, shared by the Responses and Chat Completions formats.
 * @module
 */
import { jsonResponse } from "./sse.ts";

/** The error type and code OpenAI names for each status. */
function errorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: "invalid_request_error", code: "invalid_api_key" };
  if (status === 404) return { type: "invalid_request_error", code: "model_not_found" };
  if (status === 429) return { type: "requests", code: "rate_limit_exceeded" };
  if (status >= 500) return { type: "server_error", code: null };
  return { type: "invalid_request_error", code: null };
}

/** An OpenAI error body `{error: {message, type, code, param}}` with `status` and `headers`. */
export function openaiError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return jsonResponse({ error: { message, ...errorType(status), param: null } }, status, headers);
}
