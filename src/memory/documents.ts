import type { JsonValue } from "../schemas/mod.ts";
import type { RunStatus, TaskStatus } from "../ledger/mod.ts";
import type { MemoryCard } from "./card_source.ts";

/** What memory search finds: a board card, a task (dispatch) or a workflow run. */
export type MemoryKind = "card" | "task" | "run";

/** One searchable record, its texts bounded. */
export interface MemoryDocument {
  /** `kind:id`, unique in an index. */
  key: string;
  /** What the record is. */
  kind: MemoryKind;
  /** The record's own id: a card's number, a task id, a run id. */
  id: string;
  /** A short name for it. */
  title: string;
  /** Its searchable text. */
  text: string;
  /** When it last changed (ISO 8601). */
  at: string;
}

/** Characters of a title kept for the index. */
export const TITLE_LIMIT = 200;
/** Characters of a record's text kept for the index: a long result is searched by its start. */
export const TEXT_LIMIT = 8 * 1024;

function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}

/**
 * The strings and numbers of a JSON value (object keys too), in order, joined by spaces, up to
 * `max` characters. A walk that stops at the limit: a result of many megabytes costs no more
 * than a small one.
 */
export function jsonText(value: JsonValue | undefined, max: number = TEXT_LIMIT): string {
  const parts: string[] = [];
  let size = 0;
  const stack: Array<JsonValue | undefined> = [value];
  while (stack.length > 0 && size < max) {
    const item = stack.pop();
    if (item === undefined || item === null || typeof item === "boolean") continue;
    if (typeof item === "string" || typeof item === "number") {
      const text = clip(String(item), max - size);
      parts.push(text);
      size += text.length + 1;
      continue;
    }
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push(item[i]);
      continue;
    }
    const entries = Object.entries(item);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      stack.push(child);
      stack.push(key);
    }
  }
  return clip(parts.join(" "), max);
}

function joined(parts: Array<string | undefined | null>): string {
  return clip(parts.filter((part) => part).join("\n"), TEXT_LIMIT);
}

/** A run as a document: its name, its result when it succeeded, its error otherwise. */
export function runDocument(run: RunStatus): MemoryDocument {
  return {
    key: `run:${run.run_id}`,
    kind: "run",
    id: run.run_id,
    title: clip(run.name ?? run.filename, TITLE_LIMIT),
    text: joined([
      run.name,
      run.meta.description,
      run.state === "succeeded" ? jsonText(run.result) : undefined,
      run.error?.message,
    ]),
    at: run.ended_at ?? run.created_at,
  };
}

/** A task as a document: its prompt, and its result or error. */
export function taskDocument(task: TaskStatus): MemoryDocument {
  return {
    key: `task:${task.task_id}`,
    kind: "task",
    id: task.task_id,
    title: clip(task.label ?? task.prompt.replace(/\s+/g, " "), TITLE_LIMIT),
    text: joined([
      task.label,
      clip(task.prompt, TEXT_LIMIT / 2),
      task.state === "succeeded" ? jsonText(task.result) : undefined,
      task.error?.message,
    ]),
    at: task.ended_at ?? task.created_at,
  };
}

/** A board card as a document: title, description, labels, project and log messages. */
export function cardDocument(card: MemoryCard): MemoryDocument {
  const id = clip(String(card.issue_id), TITLE_LIMIT);
  return {
    key: `card:${id}`,
    kind: "card",
    id,
    title: clip(card.title, TITLE_LIMIT),
    text: joined([
      card.title,
      card.desc,
      card.project,
      ...(card.labels ?? []).slice(0, 50),
      ...(card.log ?? []).slice(-200).map((entry) => entry.message),
    ]),
    at: card.updated_at,
  };
}
