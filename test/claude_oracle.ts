/**
 * Claude Code as the oracle of the script dialect: one workflow script run through the real
 * Claude Code's `Workflow` tool (offline, against the Anthropic stand-in) and through
 * `svc workflow run --fake-dispatch`, each reduced to what a script's author sees: its calls
 * (prompt, label, phase, answer), its `log()` lines, its phases and its result. The stand-in
 * answers each of Claude Code's sub-agents exactly as svc's fake provider answers a call, so
 * that the two observations can be compared value for value (test/claude_oracle_test.ts).
 * @module
 */
import { schemaInstance } from "../src/structured/mod.ts";
import { openLedger, type RunEvent } from "../src/ledger/mod.ts";
import type { JsonValue } from "../src/schemas/mod.ts";
import { type ModelRequest, type Reply, startModelStandIn } from "./model_standin/mod.ts";
import { runCli } from "./helpers.ts";

/** One `agent()` call as its script's author sees it. */
export interface ObservedCall {
  /** The prompt; null when the record does not show it (a schema call under svc). */
  prompt: string | null;
  label: string | null;
  phase: string | null;
  /** The call's answer, `fake response to: <prompt>` or the schema's instance. */
  answer: JsonValue | null;
  /** How it ended, in Claude Code's words: `done` for an answered call. */
  state: string;
}

/** What one run of a script showed. */
export interface Observation {
  /** Calls in a stable order (sorted), so that the order of a fan-out cannot matter. */
  calls: ObservedCall[];
  logs: string[];
  /** What the script wrote with `console`: svc narrates it apart from the log. */
  console: string[];
  phases: string[];
  result: JsonValue | null;
  /** Set when the run did not succeed: how it ended (`failed`, ...). */
  error?: string;
}

/** How a script is given to a run: its text, or a path of the project. */
export interface OracleScript {
  /** The project folder the run works in (`.claude/workflows/`, `.claude/agents/` inside). */
  project: string;
  /** The script's path inside the project, relative to it. */
  path: string;
  /** `args` as JSON text, or absent. */
  args?: string;
}

const FRAME_START = "[Workflow harness — computed task]";
const FRAME_END = "The computed task text follows:\n";
const FAKE = "fake response to: ";

/**
 * The script's prompt inside Claude Code's framing of a computed task: the text after the
 * header, every line with the two-space indent the harness adds taken off again.
 */
export function unframe(framed: string): string {
  if (!framed.includes(FRAME_END)) return framed;
  // With `sharedHeadLength`, Claude Code frames the head and the rest as two blocks, the head's
  // ending in a newline of its own, and the stand-in joins the blocks with another.
  const bodies = framed.split(FRAME_START).filter((part) => part.includes(FRAME_END))
    .map((part) =>
      part.slice(part.indexOf(FRAME_END) + FRAME_END.length).split("\n")
        .map((line) => (line.startsWith("  ") ? line.slice(2) : line)).join("\n")
    );
  return bodies.map((body, i) => (i < bodies.length - 1 ? body.replace(/\n\n$/, "") : body))
    .join("");
}

function isSubagent(request: ModelRequest): boolean {
  return request.system.includes("cc_is_subagent=true");
}

/** The `input_schema` of the StructuredOutput tool a schema call's request offers. */
function structuredSchema(request: ModelRequest): unknown {
  const body = request.body as { tools?: { name?: string; input_schema?: unknown }[] };
  return body.tools?.find((tool) => tool.name === "StructuredOutput")?.input_schema;
}

/**
 * The stand-in's answers: the first top-level request runs the script through `Workflow`, a
 * sub-agent answers as svc's fake provider does, everything else says `ok`.
 */
function oracleResponder(workflowInput: Record<string, unknown>, answered: Answered[]) {
  let launched = false;
  return (request: ModelRequest): Reply => {
    if (isSubagent(request)) {
      if (request.toolResults.length > 0) return { text: "done" };
      const prompt = unframe(request.prompt);
      if (request.tools.includes("StructuredOutput")) {
        const input = schemaInstance(structuredSchema(request)) as Record<string, unknown>;
        answered.push({ prompt, answer: input as JsonValue });
        return { toolCalls: [{ name: "StructuredOutput", input }] };
      }
      answered.push({ prompt, answer: `${FAKE}${prompt}` });
      return { text: `${FAKE}${prompt}` };
    }
    if (!launched && request.tools.includes("Workflow")) {
      launched = true;
      return { toolCalls: [{ name: "Workflow", input: workflowInput }] };
    }
    return { text: "ok" };
  };
}

/** What the stand-in answered one sub-agent with. */
interface Answered {
  prompt: string;
  answer: JsonValue;
}

/** Sorts calls by their JSON, so that both sides list them in one order. */
function sorted(calls: ObservedCall[]): ObservedCall[] {
  return calls.map((call) => ({ key: JSON.stringify(call), call }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((entry) => entry.call);
}

interface ProgressEntry {
  type: string;
  index: number;
  title?: string;
  label?: string;
  phaseTitle?: string;
  state?: string;
}

interface OutputFile {
  logs?: string[];
  result?: JsonValue;
  workflowProgress?: ProgressEntry[];
  error?: string;
  /** Set by the notification: `completed`, `failed`, ... */
  status?: string;
}

/** The task notification's output file, or why the run gave none. */
async function outputOf(stdout: string): Promise<OutputFile> {
  const events = stdout.split("\n").filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const notification = events.find((e) => e.subtype === "task_notification");
  if (notification && typeof notification.output_file === "string") {
    const text = await Deno.readTextFile(notification.output_file).catch(() => "");
    const status = String(notification.status);
    try {
      return { ...JSON.parse(text) as OutputFile, status };
    } catch {
      // A failed run's file holds only its error, in words.
      if (status !== "completed") return { status, error: text, workflowProgress: [] };
      return { error: `${status}: ${notification.summary} ${text.slice(0, 2000)}` };
    }
  }
  const refusal = events.flatMap((e) =>
    e.type === "user" ? [JSON.stringify((e.message as { content?: unknown }).content)] : []
  );
  return { error: `Claude Code ran no workflow: ${refusal.join(" ")}` };
}

/** Options of {@linkcode observeClaude}. */
export interface ClaudeOptions {
  /** The `claude` binary. */
  bin: string;
  /** A throw-away HOME, with `tmp` inside it. */
  home: { home: string; tmp: string };
  /** Give the script as `scriptPath` (absolute) rather than as text. @default false */
  byPath?: boolean;
}

/** Runs the script through the real Claude Code's `Workflow` tool and observes it. */
export async function observeClaude(
  script: OracleScript,
  options: ClaudeOptions,
): Promise<Observation> {
  const file = `${script.project}/${script.path}`;
  const input: Record<string, unknown> = options.byPath
    ? { scriptPath: file }
    : { script: await Deno.readTextFile(file) };
  if (script.args !== undefined) input.args = JSON.parse(script.args);
  const answered: Answered[] = [];
  await using standIn = startModelStandIn(oracleResponder(input, answered));
  const output = await new Deno.Command(options.bin, {
    args: [
      "-p",
      "Run the workflow.",
      "--output-format",
      "stream-json",
      "--verbose",
      "--allowedTools",
      "Workflow",
    ],
    cwd: script.project,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: options.home.home,
      TMPDIR: options.home.tmp,
      CLAUDE_CODE_TMPDIR: options.home.tmp,
      ANTHROPIC_BASE_URL: standIn.url,
      ANTHROPIC_API_KEY: "sk-ant-standin-key",
      CLAUDE_CODE_MAX_RETRIES: "0",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      CLAUDE_CODE_WORKFLOW_MAX_CONCURRENT_AGENTS: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const file_ = await outputOf(stdout);
  if (file_.error !== undefined && file_.workflowProgress === undefined) {
    const stderr = new TextDecoder().decode(output.stderr);
    throw new Error(`${file_.error} ${stderr}`);
  }
  return claudeObservation(file_, answered);
}

/** Reads Claude Code's output file and the prompts its sub-agents got into an observation. */
function claudeObservation(file: OutputFile, answered: Answered[]): Observation {
  const progress = file.workflowProgress ?? [];
  const agents = progress.filter((p) => p.type === "workflow_agent")
    .sort((a, b) => a.index - b.index);
  const calls = agents.map((entry, i): ObservedCall => {
    const call = answered[i];
    return {
      // Under svc a schema call's prompt is in no record: only its answer is compared.
      prompt: call === undefined || typeof call.answer !== "string" ? null : call.prompt,
      label: entry.label ?? null,
      phase: entry.phaseTitle ?? null,
      answer: call?.answer ?? null,
      state: entry.state ?? "unknown",
    };
  });
  return {
    calls: sorted(calls),
    logs: file.logs ?? [],
    console: [],
    phases: subWorkflowsLast(
      progress.filter((p) => p.type === "workflow_phase").map((p) => p.title ?? ""),
    ),
    result: file.result ?? null,
    // The engines' messages differ (Claude Code's scripts run on JavaScriptCore): only the
    // outcome is compared.
    ...(file.status !== "completed" ? { error: file.status ?? "failed" } : {}),
  };
}

/**
 * The phases a run shows its calls in, as Claude Code's progress lists them: each title once,
 * in the order first seen, whether `phase()` named it or a call's `phase` option did.
 */
function phaseGroups(events: RunEvent[]): string[] {
  const titles: string[] = [];
  for (const e of events) {
    const title = e.type === "narration" && e.entry.kind === "phase"
      ? e.entry.text
      : e.type === "call_started"
      ? e.phase
      : null;
    if (title !== null && !titles.includes(title)) titles.push(title);
  }
  return subWorkflowsLast(titles);
}

/**
 * Claude Code lists the groups of sub-workflows (`▸ name`) after the script's own phases. Among
 * them, which one's first call starts first is a matter of timing when they run in parallel
 * (`▸ X #2` may be first): they are compared by name, then by number.
 */
function subWorkflowsLast(titles: string[]): string[] {
  const child = (title: string) => title.startsWith("\u25b8 ");
  const order = (title: string): [string, number] => {
    const match = /^(.*) #(\d+)$/.exec(title);
    return match ? [match[1]!, Number(match[2])] : [title, 1];
  };
  const byGroup = (a: string, b: string) => {
    const [nameA, numberA] = order(a);
    const [nameB, numberB] = order(b);
    return nameA === nameB ? numberA - numberB : nameA < nameB ? -1 : 1;
  };
  return [...titles.filter((t) => !child(t)), ...titles.filter(child).sort(byGroup)];
}

/**
 * The observation with the groups of sub-workflows of one name numbered by their calls' labels
 * (the group holding the first label is `▸ X`, the next `▸ X #2`): which of two parallel
 * sub-workflows is numbered first is a matter of timing in Claude Code, not of the script.
 */
export function numberedByLabel(observation: Observation): Observation {
  const base = (phase: string) => phase.replace(/ #\d+$/, "");
  const firstLabel = new Map<string, string>();
  for (const call of observation.calls) {
    if (call.phase === null || !call.phase.startsWith("\u25b8 ")) continue;
    const label = call.label ?? call.prompt ?? "";
    const seen = firstLabel.get(call.phase);
    if (seen === undefined || label < seen) firstLabel.set(call.phase, label);
  }
  const rename = new Map<string, string>();
  const bases = new Set([...firstLabel.keys()].map(base));
  for (const name of bases) {
    const groups = [...firstLabel.entries()].filter(([phase]) => base(phase) === name)
      .sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    groups.forEach(([phase], i) => rename.set(phase, i === 0 ? name : `${name} #${i + 1}`));
  }
  const renamed = (phase: string | null) => phase === null ? null : rename.get(phase) ?? phase;
  return {
    ...observation,
    calls: sorted(observation.calls.map((call) => ({ ...call, phase: renamed(call.phase) }))),
    phases: subWorkflowsLast(observation.phases.map((phase) => renamed(phase)!)),
  };
}

/** Runs the script through `svc workflow run --fake-dispatch` and observes it. */
export async function observeSvc(script: OracleScript, svcHome: string): Promise<Observation> {
  const done = await runCli([
    "workflow",
    "run",
    script.path,
    "--fake-dispatch",
    "--json",
    ...(script.args !== undefined ? ["--args", script.args] : []),
  ], { cwd: script.project, home: svcHome });
  const status = JSON.parse(done.stdout) as {
    run_id: string;
    state: string;
    result?: JsonValue;
    error?: { message?: string };
    narration: { kind: string; text: string }[];
  };
  const ledger = await openLedger(svcHome);
  try {
    const journal = await ledger.getJournal(status.run_id);
    const events = (await ledger.readEvents({ kind: "run", id: status.run_id }))
      .map(({ event }) => event as RunEvent);
    const phaseOf = new Map<number, string | null>();
    for (const e of events) if (e.type === "call_started") phaseOf.set(e.seq, e.phase);
    const calls = journal.map((entry): ObservedCall => {
      const answer = entry.result ?? null;
      const text = typeof answer === "string" && answer.startsWith(FAKE) ? answer : null;
      return {
        prompt: text === null ? null : text.slice(FAKE.length),
        label: entry.label,
        phase: phaseOf.get(entry.seq) ?? entry.phase ?? null,
        answer,
        state: entry.outcome === "live" || entry.outcome === "replayed" ? "done" : entry.outcome,
      };
    });
    return {
      calls: sorted(calls),
      logs: status.narration.filter((n) => n.kind === "log").map((n) => n.text),
      console: status.narration.filter((n) => n.kind === "output").map((n) => n.text),
      phases: phaseGroups(events),
      result: status.result ?? null,
      ...(status.state !== "succeeded" ? { error: status.state } : {}),
    };
  } finally {
    await ledger.close();
  }
}
