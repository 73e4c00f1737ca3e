/**
 * The stand-in model server's vocabulary: a request of any wire format read into one shape, and
 * the reply a test scripts for it, which each format writes in its own wire format.
 * @module
 */

/** The wire formats the stand-in speaks. */
export type WireFormat = "anthropic" | "responses" | "chat" | "gemini";

/** One tool result the request carries back to the model (the answer to an earlier tool call). */
export interface ToolResult {
  /** The id of the tool call it answers, where the format has one. */
  id?: string;
  /** The result's text. */
  content: string;
  /** Whether the tool said it failed. */
  isError?: boolean;
}

/** A request of any wire format, read into one shape for the test's responder. */
export interface ModelRequest {
  format: WireFormat;
  /** The URL's path, e.g. `/v1/messages`. */
  path: string;
  /** The model the request names (Gemini: from the path). */
  model: string;
  /** Whether the client asked for a stream of events. */
  stream: boolean;
  /** Every system text of the request, joined by newlines. */
  system: string;
  /** The text of the latest user message (tool results left out). */
  prompt: string;
  /** The text of every message, joined: for markers anywhere in the conversation. */
  transcript: string;
  /** Tool results in the latest user turn: set when the tool answers an earlier tool call. */
  toolResults: ToolResult[];
  /** The names of the tools the request offers. */
  tools: string[];
  /** The body as parsed JSON. */
  body: unknown;
  /** The request's headers, lower-case names. */
  headers: Record<string, string>;
}

/** A tool call the model makes. */
export interface ToolCall {
  /** The tool's name as the client offered it (e.g. `Write`, `shell`, `write_file`). */
  name: string;
  /** The tool's input. */
  input: Record<string, unknown>;
  /** The call's id; made up when absent. */
  id?: string;
}

/** Token counts of a reply; the formats write them in their own fields. */
export interface ReplyUsage {
  input: number;
  output: number;
  /** Prompt tokens read from the cache (part of the prompt). */
  cacheRead?: number;
  /** Prompt tokens written to the cache (part of the prompt). */
  cacheWrite?: number;
  /** Reasoning tokens (part of the output where the format counts them so). */
  reasoning?: number;
}

/** What the stand-in answers one request with. */
export interface Reply {
  /** The answer's text. */
  text?: string;
  /** Tool calls, after the text. */
  toolCalls?: ToolCall[];
  /** Token counts; a small default when absent. */
  usage?: ReplyUsage;
  /** Answer with this HTTP error instead (the format's error body, the given headers). */
  error?: { status: number; message?: string; headers?: Record<string, string> };
  /** Break the stream: send the first events, then end the connection without finishing. */
  broken?: boolean;
  /** Never answer: hold the request open until the client goes away. */
  hang?: boolean;
  /**
   * Stall: answer with an event stream's headers, then hold the stream open without sending
   * anything until the client goes away.
   */
  stall?: boolean;
}

/** Scripts the stand-in: called once per model request. */
export type Responder = (request: ModelRequest) => Reply | Promise<Reply>;

/** How one wire format reads its requests and writes its replies. */
export interface WireFormatHandler {
  format: WireFormat;
  /** Whether this format serves the request (by method and path). */
  matches(method: string, path: string): boolean;
  /** Reads a request of this format into the common shape. */
  read(body: unknown, url: URL, headers: Record<string, string>): ModelRequest;
  /** Writes a reply (not an error, not a hang) in this format, streamed when the request asked. */
  write(reply: Reply, request: ModelRequest): Response;
  /** Writes an error reply in this format. */
  error(status: number, message: string, headers?: Record<string, string>): Response;
}

/** The default token counts of a reply that names none. */
export const DEFAULT_USAGE: ReplyUsage = { input: 13, output: 6 };
