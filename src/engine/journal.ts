import type { JournalEntry } from "../ledger/mod.ts";
import { sha256 } from "../ledger/mod.ts";
import type { AgentOptions, JsonValue } from "../schemas/mod.ts";

/** JSON with object keys sorted at every level, so that equal options hash equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`;
}

/**
 * The journal hash of a call: SHA-256 of the prompt and the canonicalised options, in hex. The
 * options are those the script gave (with unknown ones too), as the guest hashes them to
 * decide a replay.
 */
export function callHash(prompt: string, options: AgentOptions | Record<string, unknown>): string {
  return sha256(canonicalJson({ prompt, options }));
}

/** Most numbers a recorded position holds (32 nested fan-outs); guest/positions.js agrees. */
export const MAX_POSITION_DEPTH = 64;
const MAX_POSITION_INDEX = 2 ** 31 - 1;

/**
 * A checked call position from the guest: an array of 1 to {@linkcode MAX_POSITION_DEPTH}
 * non-negative integers of odd length (steps at even depths, branches at odd ones), else
 * undefined.
 */
export function parsePosition(value: unknown): number[] | undefined {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_POSITION_DEPTH) {
    return undefined;
  }
  if (value.length % 2 === 0) return undefined;
  for (const n of value) {
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0 || n > MAX_POSITION_INDEX) {
      return undefined;
    }
  }
  return value as number[];
}

/** A position as the journal and the guest key it: `2.1.0`. */
export function positionKey(position: readonly number[]): string {
  return position.join(".");
}

/**
 * Where an entry sits in its script. Entries journaled before positions existed sit at
 * `[seq - 1]`: the root branch in call order, which is exact for a script without fan-outs.
 */
export function entryPosition(entry: JournalEntry): readonly number[] {
  return entry.position ?? [entry.seq - 1];
}

/**
 * Whether the call at `p` comes logically at or before the call at `q`: earlier on `q`'s branch
 * or on one of its ancestors, or inside a fan-out that joined before `q`. Calls on sibling
 * branches of one fan-out come before neither. Even depths are steps, odd depths branches.
 */
export function precedes(p: readonly number[], q: readonly number[]): boolean {
  const n = Math.min(p.length, q.length);
  for (let d = 0; d < n; d++) {
    if (p[d] === q[d]) continue;
    return d % 2 === 0 && p[d]! < q[d]!;
  }
  return p.length === q.length;
}

/** One call a resumed run may replay, and the run whose journal made its value live. */
export interface ReplayCandidate {
  entry: JournalEntry;
  from: string;
}

/** What a journal entry gives a resume: a value to replay, or nothing (failed, skipped). */
function usable(entry: JournalEntry): boolean {
  return (entry.outcome === "live" || entry.outcome === "replayed") && entry.result !== undefined;
}

/**
 * The calls a resume of run `runId` may replay: its own journal, and, where it never got to
 * record them, its own source's calls. A run replays some calls without waiting for their entry
 * (their values are durable in its source's journal), so a run killed before those entries were
 * written must still offer them. Its source's call at `q` counts only when none of the run's own
 * calls that did not replay comes at or before `q`: after a difference, the run ran live.
 */
export function mergeReplay(
  runId: string,
  entries: readonly JournalEntry[],
  older: readonly ReplayCandidate[],
): ReplayCandidate[] {
  const own = new Map<string, ReplayCandidate>();
  const differed: (readonly number[])[] = [];
  for (const entry of entries) {
    const position = entryPosition(entry);
    if (entry.outcome !== "replayed") differed.push(position);
    const key = positionKey(position);
    if (usable(entry) && !own.has(key)) {
      own.set(key, { entry, from: entry.replayed_from ?? runId });
    }
  }
  const merged = [...own.values()];
  for (const candidate of older) {
    const position = entryPosition(candidate.entry);
    if (own.has(positionKey(position))) continue;
    if (differed.some((p) => precedes(p, position))) continue;
    merged.push(candidate);
  }
  return merged;
}

/** One offered call of the guest's init frame: `[position key, hash]`, plus the value if sent. */
export type OfferedCall = [string, string] | [string, string, JsonValue];

/** Limits of what the init frame carries: larger values stay with the host and are asked for. */
export interface OfferLimits {
  /** Bytes of values (as JSON) the guest is given, in all. */
  totalBytes: number;
  /** Largest single value given. */
  valueBytes: number;
}

/**
 * The calls a resumed run may replay, by logical position. The guest decides which calls
 * replay (it knows the script's structure) and answers them itself from the offered values;
 * the host only hands each offered call out once, and never one it did not offer.
 */
export class ReplaySource {
  readonly runId: string;
  #candidates = new Map<string, ReplayCandidate>();
  readonly #taken = new Set<string>();
  /** Settles once the candidates are read; rejects when they could not be. */
  readonly #loaded: Promise<void>;

  /**
   * `candidates` may still be being read from the ledger: a resume reads its source's journal
   * while its guest boots, and the guest gets the offer (and so asks for nothing) only once
   * they are here.
   */
  constructor(
    runId: string,
    candidates: readonly ReplayCandidate[] | Promise<readonly ReplayCandidate[]>,
  ) {
    this.runId = runId;
    this.#loaded = Promise.resolve(candidates).then((list) => {
      this.#candidates = new Map(
        list.map((candidate) => [positionKey(entryPosition(candidate.entry)), candidate]),
      );
    });
    // Awaited by `offer`; a run stopped before its guest started never asks.
    this.#loaded.catch(() => {});
  }

  /** How many calls there are to replay (0 until they are read). */
  get size(): number {
    return this.#candidates.size;
  }

  /**
   * The init frame's list, once the candidates are read: every candidate, with its value while
   * the limits allow.
   */
  async offer(limits: OfferLimits): Promise<OfferedCall[]> {
    await this.#loaded;
    const out: OfferedCall[] = [];
    let total = 0;
    for (const [key, { entry }] of this.#candidates) {
      const bytes = JSON.stringify(entry.result).length;
      if (bytes <= limits.valueBytes && total + bytes <= limits.totalBytes) {
        total += bytes;
        out.push([key, entry.hash, entry.result as JsonValue]);
      } else out.push([key, entry.hash]);
    }
    return out;
  }

  /**
   * Hands out the candidate at `key` once: with `hash`, only when the hashes match (a call the
   * guest asks the host to replay); without, whatever it is (a call the guest answered itself,
   * with a value the host gave it). Undefined when there is none, or it was taken.
   */
  take(key: string, hash?: string): ReplayCandidate | undefined {
    const candidate = this.#candidates.get(key);
    if (!candidate || this.#taken.has(key)) return undefined;
    if (hash !== undefined && candidate.entry.hash !== hash) return undefined;
    this.#taken.add(key);
    return candidate;
  }
}
