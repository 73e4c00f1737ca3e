/**
 * What a peer's message asks of svc: a dispatch of its text, or, when its metadata names one,
 * a named workflow run. Every value is the peer's and is checked here: parts of known kinds
 * only, bounded text, a workflow name of the allowed shape, bounded `args`.
 *
 * Metadata keys (on the message): `svc.workflow` (a workflow name: its `meta.name`, else its file
 * name), `svc.scriptPath` (a published workflow's file, from the host's project root; wins over
 * `svc.workflow`, as in Claude Code), `svc.args` (any JSON, the run's `args`), `svc.title` and
 * `svc.description` (recorded with the run), `svc.fake_dispatch` (true: the fake provider
 * answers; for tests and dry runs).
 * @module
 */
import type { Message } from "@a2a-js/sdk";
import { SvcError } from "../errors/mod.ts";
import { type JsonValue, SessionNameSchema } from "../schemas/mod.ts";

/** Metadata key naming the workflow to run. */
export const WORKFLOW_KEY = "svc.workflow";
/** Metadata key holding the run's `args`. */
export const ARGS_KEY = "svc.args";
/** Metadata key naming a published workflow's file, from the host's project root. */
export const SCRIPT_PATH_KEY = "svc.scriptPath";
/** Metadata key of the run's title. */
export const TITLE_KEY = "svc.title";
/** Metadata key of the run's description. */
export const DESCRIPTION_KEY = "svc.description";
/** Metadata key asking for the fake provider. */
export const FAKE_KEY = "svc.fake_dispatch";
/** Longest prompt a message may carry (a task's own limit). */
export const PROMPT_LIMIT = 32 * 1024;
/** Largest `args`, in bytes of JSON. */
export const ARGS_LIMIT = 256 * 1024;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** A dispatch, or a named workflow run, as a message asks for it. */
export type PeerRequest =
  | { kind: "dispatch"; prompt: string; fakeDispatch: boolean }
  | {
    kind: "workflow";
    /** The workflow as the peer named it: its name, or its `scriptPath`. */
    name: string;
    /** Set when the peer named a file (`svc.scriptPath`) rather than a name. */
    scriptPath?: string;
    /** The run's title and description, checked by the run request's schema. */
    title?: string;
    description?: string;
    args: JsonValue | undefined;
    prompt: string;
    fakeDispatch: boolean;
  };

function refuse(reason: string): never {
  throw new SvcError("invalid_request", `Cannot take the message: ${reason}`);
}

function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? "").length;
}

/** Reads a message into what svc does for it; throws `invalid_request` naming what is wrong. */
export function readPeerRequest(message: Message): PeerRequest {
  const texts: string[] = [];
  let data: JsonValue | undefined;
  for (const part of message.parts) {
    const content = part.content;
    if (content?.$case === "text") texts.push(content.value);
    else if (content?.$case === "data") {
      if (jsonBytes(content.value) > ARGS_LIMIT) refuse(`a data part is over ${ARGS_LIMIT} bytes`);
      data = content.value as JsonValue;
      texts.push(JSON.stringify(content.value));
    } else refuse("svc reads text and data parts only, not files");
  }
  const prompt = texts.join("\n\n");
  if (prompt.length > PROMPT_LIMIT) refuse(`its text is over ${PROMPT_LIMIT} characters`);
  const metadata = (message.metadata ?? {}) as Record<string, unknown>;
  const fake = metadata[FAKE_KEY];
  if (fake !== undefined && typeof fake !== "boolean") {
    refuse(`'${FAKE_KEY}' must be true or false`);
  }
  const fakeDispatch = fake === true;
  const workflow = metadata[WORKFLOW_KEY];
  const scriptPath = metadata[SCRIPT_PATH_KEY];
  if (workflow === undefined && scriptPath === undefined) {
    if (prompt.trim() === "") refuse("it has no text to dispatch");
    return { kind: "dispatch", prompt, fakeDispatch };
  }
  if (workflow !== undefined && (typeof workflow !== "string" || !NAME.test(workflow))) {
    refuse(`'${WORKFLOW_KEY}' must be a workflow name: letters, digits, '_' and '-'`);
  }
  if (
    scriptPath !== undefined &&
    // deno-lint-ignore no-control-regex -- a path of one line
    (typeof scriptPath !== "string" || !/^[^\u0000-\u001f\u007f]{1,512}$/.test(scriptPath))
  ) {
    refuse(`'${SCRIPT_PATH_KEY}' must be a path of at most 512 characters`);
  }
  const runTexts = textFields(metadata);
  let args: JsonValue | undefined;
  if (ARGS_KEY in metadata) {
    if (jsonBytes(metadata[ARGS_KEY]) > ARGS_LIMIT) {
      refuse(`'${ARGS_KEY}' is over ${ARGS_LIMIT} bytes`);
    }
    args = metadata[ARGS_KEY] as JsonValue;
  } else if (data !== undefined) args = data;
  else if (prompt.trim() !== "") args = prompt;
  return {
    kind: "workflow",
    ...(typeof scriptPath === "string"
      ? { name: scriptPath, scriptPath }
      : { name: workflow as string }),
    ...runTexts,
    args,
    prompt,
    fakeDispatch,
  };
}

/** `svc.title` and `svc.description`, when strings (their bounds are the run request's). */
function textFields(metadata: Record<string, unknown>): { title?: string; description?: string } {
  const out: { title?: string; description?: string } = {};
  for (const [key, field] of [[TITLE_KEY, "title"], [DESCRIPTION_KEY, "description"]] as const) {
    const value = metadata[key];
    if (value === undefined) continue;
    if (typeof value !== "string") refuse(`'${key}' must be text`);
    out[field] = value;
  }
  return out;
}

/** The svc session name of an A2A context: safe for a ledger key, bounded, one per context. */
export async function sessionNameOf(contextId: string): Promise<string> {
  // A context of the one rule's form (and short) is kept readable; any other is hashed.
  if (contextId.length <= 100 && SessionNameSchema.safeParse(contextId).success) {
    return `a2a-${contextId}`;
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(contextId));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  // The dot keeps a hashed name apart from every name of the first kind.
  return `a2a.${hex.slice(0, 48)}`;
}
