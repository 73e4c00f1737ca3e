/**
 * The progress in Codex's `exec --json` events: a command as it starts, the agent's messages,
 * files a patch changed, other tools (MCP, web search), and errors.
 * @module
 */
import type { ProgressChannel } from "../progress.ts";
import { count, field, isRecord, type JsonRecord, text } from "./json_fields.ts";
import { toolTarget } from "./tool_target.ts";

/** The files of a `file_change` item, with how each changed. */
function changedFiles(item: JsonRecord, progress: ProgressChannel): void {
  const changes = item.changes;
  if (!Array.isArray(changes)) return;
  for (const change of changes) {
    const path = text(change, "path");
    if (path !== undefined) progress.file(path, text(change, "kind") ?? null);
  }
}

/** What a started item shows: a command, or another tool, as it begins. */
function started(item: JsonRecord, kind: string | undefined, progress: ProgressChannel): void {
  if (kind === "command_execution") progress.tool("shell", text(item, "command") ?? null);
  else if (kind === "mcp_tool_call") {
    const name = [text(item, "server"), text(item, "tool")].filter(Boolean).join(".");
    progress.tool(name || "mcp", toolTarget(item.arguments));
  } else if (kind === "web_search") progress.tool("web_search", text(item, "query") ?? null);
}

/** What a completed item shows: a message, changed files, a failed command, an error. */
function completed(item: JsonRecord, kind: string | undefined, progress: ProgressChannel): void {
  if (kind === "agent_message" || kind === "assistant_message") {
    const said = text(item, "text");
    if (said) progress.text(`${said}\n`);
  } else if (kind === "file_change") changedFiles(item, progress);
  else if (kind === "command_execution") {
    const code = count(item, "exit_code");
    if (code !== undefined && code !== 0) {
      progress.error(`command exited with code ${code}: ${text(item, "command") ?? ""}`);
    }
  } else if (kind === "error") progress.error(text(item, "message") ?? "error");
}

/** Reports the progress in one event of `codex exec --json`. */
export function codexProgress(event: JsonRecord, progress: ProgressChannel): void {
  const type = text(event, "type");
  if (type === "turn.failed") {
    progress.error(text(field(event, "error"), "message") ?? "the turn failed");
    return;
  }
  if (type !== "item.started" && type !== "item.completed") return;
  const item = field(event, "item");
  if (!isRecord(item)) return;
  // `item_type` is the name of the first JSON format.
  const kind = text(item, "type") ?? text(item, "item_type");
  if (type === "item.started") started(item, kind, progress);
  else completed(item, kind, progress);
}
