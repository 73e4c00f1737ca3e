/**
 * What a Codex thread has used so far, read from Codex's own session file. After
 * `codex exec resume`, Codex reports the thread's cumulative usage in `turn.completed` (checked
 * with codex-cli 0.169.0: 13/6, then 26/12, then 39/18 for three equal turns), so the turn's own
 * usage is that figure minus the thread's total before the turn. Codex keeps each thread as
 * `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`, whose
 * `event_msg` lines of type `token_count` carry `info.total_token_usage`, the running total.
 * @module
 */
import { platform } from "../../platform/mod.ts";
import { field, parseJsonLine, text, tokens } from "./json_fields.ts";

/** Token counts of a thread, as Codex names them. */
export interface CodexTokens {
  input_tokens: number;
  output_tokens: number;
}

/** A UUIDv7 thread id: its first 48 bits are the creation time in milliseconds. */
const THREAD_V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY_MS = 86_400_000;

/** Where Codex keeps its state for a process with `env`: `CODEX_HOME`, else `~/.codex`. */
export function codexHome(env: Readonly<Record<string, string>>): string | undefined {
  if (env.CODEX_HOME) return env.CODEX_HOME;
  return env.HOME ? `${env.HOME.replace(/\/+$/, "")}/.codex` : undefined;
}

/**
 * The date directories a thread's file may be in: the UTC day of its creation and the days
 * either side (the directory follows the local time of the machine that made it).
 */
function dayDirs(thread: string): string[] | undefined {
  const match = THREAD_V7.exec(thread);
  if (!match) return undefined;
  const created = parseInt(`${match[1]}${match[2]}`, 16);
  return [0, -DAY_MS, DAY_MS].map((offset) => {
    const day = new Date(created + offset);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${day.getUTCFullYear()}/${pad(day.getUTCMonth() + 1)}/${pad(day.getUTCDate())}`;
  });
}

async function findRollout(sessions: string, thread: string): Promise<string | undefined> {
  for (const day of dayDirs(thread) ?? []) {
    let names: string[];
    try {
      names = await platform().readDir(`${sessions}/${day}`);
    } catch {
      continue;
    }
    const name = names.find((n) => n.startsWith("rollout-") && n.endsWith(`-${thread}.jsonl`));
    if (name) return `${sessions}/${day}/${name}`;
  }
  return undefined;
}

/** The last running total in a session file's text. */
function lastTotal(rollout: string): CodexTokens | undefined {
  let total: CodexTokens | undefined;
  for (const line of rollout.split("\n")) {
    if (!line.includes('"token_count"')) continue;
    const entry = parseJsonLine(line);
    const payload = field(entry, "payload");
    if (text(entry, "type") !== "event_msg" || text(payload, "type") !== "token_count") continue;
    const used = field(field(payload, "info"), "total_token_usage");
    if (used) {
      total = {
        input_tokens: tokens(used, "input_tokens"),
        output_tokens: tokens(used, "output_tokens"),
      };
    }
  }
  return total;
}

/**
 * The usage of `thread` so far, as Codex recorded it under the Codex home of `env`; zero for a
 * thread whose file holds no count yet, `undefined` when the file cannot be found or read (a
 * thread id that is not a UUIDv7, another machine's thread, a home svc may not read).
 */
export async function threadUsage(
  thread: string,
  env: Readonly<Record<string, string>>,
): Promise<CodexTokens | undefined> {
  const home = codexHome(env);
  if (home === undefined) return undefined;
  const path = await findRollout(`${home}/sessions`, thread);
  if (path === undefined) return undefined;
  try {
    return lastTotal(await platform().readTextFile(path)) ?? { input_tokens: 0, output_tokens: 0 };
  } catch {
    return undefined;
  }
}
