import {
  clipStrings,
  clipText,
  type JournalEntry,
  type RunCondition,
  type RunError,
  type RunStatus,
  type ScriptErrorRecord,
} from "../ledger/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { phaseTitles, type ScriptMeta } from "./script_check.ts";

/**
 * Sizes of what a run records from its script, chosen so that the run's status (meta, error,
 * conditions and counters) stays well inside one KV value, and so that a journal entry leaves
 * room for an inline result beside it. The ledger clips anything still over; these bounds
 * make the status in memory and the status stored the same.
 */
export const RECORD_LIMITS = {
  /** Labels, routes, models, names: one line a person reads. */
  short: 1024,
  /** Reasons and messages. */
  text: 4 * 1024,
  /** A condition's message, and each string of its data. */
  condition: 2 * 1024,
  /** Conditions the status keeps, and their total size as JSON; later ones are counted. */
  conditions: 50,
  conditionBytes: 24 * 1024,
  /** `meta.name`; `meta.description`; `meta.phases`, each of at most `short` characters. */
  metaName: 256,
  metaDescription: 4 * 1024,
  metaPhases: 50,
  /** Thrown items of `parallel()`/`pipeline()` the status keeps, and their total size as JSON. */
  scriptErrors: 20,
  scriptErrorBytes: 16 * 1024,
};

/** A journal entry with its texts clipped; its result is left alone (blobs take large ones). */
export function boundEntry(entry: JournalEntry): JournalEntry {
  const { short, text } = RECORD_LIMITS;
  const out: JournalEntry = {
    ...entry,
    label: entry.label === null ? null : clipText(entry.label, short),
    ...(entry.phase !== undefined ? { phase: clipText(entry.phase, short) } : {}),
    provider: entry.provider === null ? null : clipText(entry.provider, short),
    model: entry.model === null ? null : clipText(entry.model, short),
  };
  if (entry.reason !== undefined) out.reason = clipText(entry.reason, text);
  if (entry.route !== undefined) out.route = clipText(entry.route, short);
  if (entry.sandbox_clamped !== undefined) {
    out.sandbox_clamped = clipText(entry.sandbox_clamped, short);
  }
  if (entry.replayed_from !== undefined) out.replayed_from = clipText(entry.replayed_from, short);
  if (entry.worktree !== undefined) {
    const { path, branch, diff } = entry.worktree;
    out.worktree = {
      ...entry.worktree,
      path: clipText(path, short),
      branch: clipText(branch, short),
      ...(diff !== undefined ? { diff: clipText(diff, text) } : {}),
    };
  }
  return out;
}

/** A condition with its message and every string of its data clipped. */
export function boundCondition(condition: RunCondition): RunCondition {
  const max = RECORD_LIMITS.condition;
  const out: RunCondition = { ...condition, message: clipText(condition.message, max) };
  if (condition.data !== undefined) {
    out.data = clipStrings(condition.data, max) as Record<string, JsonValue>;
  }
  return out;
}

/**
 * The script's meta as the status keeps it: name, description, `whenToUse` and phase titles,
 * clipped. Other fields (phase details, unknown fields) stay with the script.
 */
export function boundMeta(meta: ScriptMeta): RunStatus["meta"] {
  const { metaName, metaDescription, metaPhases, short } = RECORD_LIMITS;
  const out: RunStatus["meta"] = {};
  if (meta.name !== undefined) out.name = clipText(meta.name, metaName);
  if (meta.description !== undefined) {
    out.description = clipText(meta.description, metaDescription);
  }
  if (meta.whenToUse !== undefined) out.whenToUse = clipText(meta.whenToUse, metaDescription);
  const titles = phaseTitles(meta);
  if (titles !== undefined) {
    out.phases = titles.slice(0, metaPhases).map((phase) => clipText(phase, short));
  }
  return out;
}

/** A run error with its texts clipped: messages of crashes and scripts come from the guest. */
export function boundError(error: RunError): RunError {
  const { short, text } = RECORD_LIMITS;
  const out: RunError = {
    ...error,
    code: clipText(error.code, short),
    message: clipText(error.message, text + short),
  };
  if (error.file !== undefined) out.file = clipText(error.file, short);
  if (error.stack !== undefined) out.stack = clipText(error.stack, text);
  return out;
}

/** A thrown item's record with its texts clipped: name, message, label and file come from the guest. */
export function boundScriptError(record: ScriptErrorRecord): ScriptErrorRecord {
  const { short, metaName } = RECORD_LIMITS;
  const out: ScriptErrorRecord = {
    ...record,
    label: record.label === null ? null : clipText(record.label, short),
    name: clipText(record.name, metaName),
    message: clipText(record.message, short),
  };
  if (record.file !== undefined) out.file = clipText(record.file, short);
  return out;
}
