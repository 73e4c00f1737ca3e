/**
 * What a coding agent's tool use works on, read from the tool's input as each tool names it
 * (`file_path`, `filePath`, `command`, `pattern`, ...): the target a progress event shows.
 * @module
 */
import { isRecord } from "./json_fields.ts";

/** Input fields that name a tool's target, most telling first. */
const TARGET_FIELDS = [
  "file_path",
  "filePath",
  "notebook_path",
  "absolute_path",
  "path",
  "command",
  "cmd",
  "pattern",
  "url",
  "query",
  "description",
] as const;

/** The target of a tool use from its input (a string or a command's argument list), if any. */
export function toolTarget(input: unknown): string | null {
  if (!isRecord(input)) return null;
  for (const name of TARGET_FIELDS) {
    const value = input[name];
    if (typeof value === "string" && value.trim() !== "") return value;
    if (Array.isArray(value) && value.every((part) => typeof part === "string")) {
      return value.join(" ");
    }
  }
  return null;
}

/** Tools that change the file they name, by the names the four tools give them. */
const FILE_WRITERS: Readonly<Record<string, string>> = {
  Write: "write",
  Edit: "update",
  MultiEdit: "update",
  NotebookEdit: "update",
  write: "write",
  edit: "update",
  patch: "update",
  write_file: "write",
  replace: "update",
};

/** How a tool changes the file it names (`write`, `update`), or undefined for other tools. */
export function fileChange(tool: string): string | undefined {
  return Object.hasOwn(FILE_WRITERS, tool) ? FILE_WRITERS[tool] : undefined;
}
