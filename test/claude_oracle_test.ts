/**
 * Claude Code as the oracle of the script dialect. Every workflow script under test/fixtures
 * that Claude Code can run is run through the real Claude Code's `Workflow` tool (offline,
 * against the Anthropic stand-in, one sub-agent at a time) and through
 * `svc workflow run --fake-dispatch`; the two must agree on the calls (count, prompts, labels,
 * phases, answers), the `log()` lines, the phases and the result, or differ only as a listed,
 * documented difference (docs/SCRIPTS.md, "Differences from Claude Code's Workflow tool"). A
 * listed difference that no longer occurs fails too, so the list stays true.
 */
import assert from "node:assert/strict";
import {
  numberedByLabel,
  type Observation,
  observeClaude,
  observeSvc,
  unframe,
} from "./claude_oracle.ts";
import { agentHome, realToolTest } from "./real_agents.ts";
import { fixture, ROOT, tempDir } from "./helpers.ts";

/** Scripts under test/fixtures that Claude Code cannot run, and why (none is compared). */
export const NOT_COMPARED: Record<string, string> = {
  "loops.js": "never ends: it is there for svc's wall-clock timeout",
  "refused_loop.js": "never ends in Claude Code: it calls agent() forever, which svc stops",
  "sequential_burst.js": "150 sequential calls with busy work, for the crash test: nothing the " +
    "shorter scripts do not show, at many times their running time",
  "bad_meta.js": "its meta is not a literal: a refusal before the run on both sides",
  "typescript.ts.js": "TypeScript: a syntax error on both sides",
  "dialect/unknown_meta.js": "compared: see the cases",
  "guest/forged_replay.js": "not a workflow script: a forged guest for the bridge's tests",
};

/**
 * The known differences, by the id of their row in docs/SCRIPTS.md: each turns what Claude
 * Code showed into what svc shows, taking from svc's observation only what the difference is
 * about, and must change something where it is listed.
 */
const DIFFERENCES: Record<string, (cc: Observation, svc: Observation) => Observation> = {
  // log() of an object or array: `[object]` there, its JSON here.
  "log-object-json": (cc, svc) => ({
    ...cc,
    logs: cc.logs.map((line, i) => {
      const ours = svc.logs[i];
      return line === "[object]" && ours !== undefined && /^[[{]/.test(ours) ? ours : line;
    }),
  }),
  // budget.unit: undefined there, the unit of the run's budget here.
  "budget-unit": (cc, svc) =>
    withResult(cc, svc, "unit", (ours) => ["tokens", "usd"].includes(ours)),
  // process, fetch and Deno: undefined there, present (and locked) here.
  "visible-globals": (cc, svc) => {
    const next = withResult(cc, svc, "process", (ours) => ours === "object");
    return withResult(
      withResult(next, svc, "fetch", (ours) => ours === "function"),
      svc,
      "Deno",
      (ours) => ours === "object",
    );
  },
  // console.log(): a log line there, the guest's stray output here.
  "console-output": (cc, svc) => ({
    ...cc,
    logs: cc.logs.filter((line) => !svc.console.includes(line)),
    console: svc.console,
  }),
  // A failed run: Claude Code's report holds only the error, svc's everything up to it.
  "failed-run-report": (cc, svc) =>
    cc.error !== undefined && cc.calls.length === 0 && cc.logs.length === 0
      ? { ...cc, calls: svc.calls, logs: svc.logs, phases: svc.phases }
      : cc,
};

/**
 * `cc` with the result's field `key` as svc gave it, when Claude Code gave `"undefined"` and
 * svc's value passes `allowed`.
 */
function withResult(
  cc: Observation,
  svc: Observation,
  key: string,
  allowed: (ours: string) => boolean,
): Observation {
  const theirs = cc.result as Record<string, unknown> | null;
  const ours = svc.result as Record<string, unknown> | null;
  const value = ours?.[key];
  if (theirs?.[key] !== "undefined" || typeof value !== "string" || !allowed(value)) return cc;
  return { ...cc, result: { ...theirs, [key]: value } as Observation["result"] };
}

interface Case {
  /** The script, relative to test/fixtures. */
  script: string;
  /** `args` as JSON text. */
  args?: string;
  /** Ids of the differences this case shows. */
  differences?: string[];
}

const CASES: Case[] = [
  { script: "narrating.js", args: '{"count":3}' },
  { script: "paced.js", args: '{"steps":2}' },
  { script: "three_steps.js" },
  { script: "fan_out_failures.js" },
  { script: "terminal_tricks.js", differences: ["console-output"] },
  { script: "throws.js", differences: ["failed-run-report"] },
  { script: "dialect/unknown_meta.js" },
  { script: "claude_workflows/review_dimensions.js", args: '{"base":"main"}' },
  {
    script: "claude_workflows/deep_research.js",
    args: JSON.stringify("Which sorting algorithm does V8 use for Array.prototype.sort?"),
  },
  { script: "claude_workflows/security_review.js" },
  { script: "claude_workflows/dev_cycle.js", args: '{"feature":"F-001","maxRounds":2}' },
  { script: "claude_workflows/dev_cycle.js", args: JSON.stringify("F-001") },
  { script: "claude_workflows/hyper_research.js", args: '{"contextDoc":"docs/context.md"}' },
  // A project-relative workflow({scriptPath}), resolved from the project's root on both sides.
  {
    script: "claude_workflows/hyper_research.js",
    args: '{"contextDoc":"docs/context.md","byPath":true}',
  },
  { script: "claude_workflows/topic_research.js", args: '{"topic":"CRDTs"}' },
  { script: "claude_workflows/map_codebase.js" },
  { script: "claude_workflows/screen.js", args: JSON.stringify("AAPL MSFT --max 2") },
  { script: "claude_probes/labels.js" },
  { script: "claude_probes/item_failures.js" },
  { script: "claude_probes/lenient_options.js" },
  { script: "claude_probes/narrowing.js" },
  { script: "claude_probes/empty_prompt.js" },
  {
    script: "claude_probes/globals.js",
    differences: ["log-object-json", "budget-unit", "visible-globals", "console-output"],
  },
  { script: "claude_probes/nested.js" },
  { script: "claude_probes/nested_child.js", args: '{"topic":"tides"}' },
  { script: "claude_probes/shared_head.js" },
  { script: "claude_probes/stall_ms.js" },
];

/** Where a fixture sits in the project: Claude Code's scripts and the probes side by side. */
function projectPath(script: string): string {
  return `.claude/workflows/${script.replace(/^claude_(workflows|probes)\//, "")}`;
}

/**
 * The script as both sides run it: Claude Code refuses a script whose `meta` has no
 * `description` (or no `meta`), so one is added; svc runs the same text.
 */
function prepared(text: string): string {
  const meta = /^export const meta = \{/m;
  if (!meta.test(text)) {
    return `export const meta = { name: "fixture", description: "A test fixture." };\n${text}`;
  }
  if (/description\s*:/.test(text)) return text;
  return text.replace(meta, 'export const meta = { description: "A test fixture.",');
}

/** A project holding every fixture script in `.claude/workflows/`, and the agent types. */
async function oracleProject(): Promise<{ path: string } & AsyncDisposable> {
  const dir = await tempDir("svc-oracle-project-");
  const flows = `${dir.path}/.claude/workflows`;
  await Deno.mkdir(`${flows}/dialect`, { recursive: true });
  await Deno.mkdir(`${dir.path}/.claude/agents`, { recursive: true });
  for (const c of CASES) {
    const text = prepared(await Deno.readTextFile(fixture(c.script)));
    await Deno.writeTextFile(`${dir.path}/${projectPath(c.script)}`, text);
  }
  for (const entry of Deno.readDirSync(fixture("claude_workflows/agents"))) {
    await Deno.copyFile(
      fixture(`claude_workflows/agents/${entry.name}`),
      `${dir.path}/.claude/agents/${entry.name}`,
    );
  }
  return dir;
}

/** The ids of the rows of the differences table of docs/SCRIPTS.md. */
async function documentedDifferences(): Promise<Set<string>> {
  const doc = await Deno.readTextFile(`${ROOT}/docs/SCRIPTS.md`);
  const start = doc.indexOf("## Differences from Claude Code's Workflow tool");
  assert.notEqual(start, -1, "docs/SCRIPTS.md has the differences section");
  const end = doc.indexOf("\n## ", start + 3);
  const section = doc.slice(start, end === -1 ? undefined : end);
  return new Set([...section.matchAll(/^\| `([a-z0-9-]+)` +\|/gm)].map((m) => m[1]!));
}

Deno.test("the oracle unframes Claude Code's computed task text", () => {
  const framed = "[Workflow harness — computed task] header. The computed task text follows:\n" +
    "  line one\n    indented\n\n  last";
  assert.equal(unframe(framed), "line one\n  indented\n\nlast");
  // A shared head: framed as a block of its own, which ends in a newline; blocks joined by one.
  const header = "[Workflow harness — computed task] header. The computed task text follows:\n";
  const head = `${header}  the head.\n  \n  \n`;
  assert.equal(unframe(`${head}\n${header}  the rest`), "the head.\n\nthe rest");
});

Deno.test("every fixture script is compared with Claude Code or listed with a reason", () => {
  const compared = new Set(CASES.map((c) => c.script));
  const scripts = [...Deno.readDirSync(fixture("."))].filter((e) =>
    e.isFile && e.name.endsWith(".js")
  )
    .map((e) => e.name);
  for (const folder of ["claude_workflows", "claude_probes", "dialect", "guest"]) {
    for (const e of Deno.readDirSync(fixture(folder))) {
      if (e.isFile && e.name.endsWith(".js")) scripts.push(`${folder}/${e.name}`);
    }
  }
  for (const script of scripts) {
    assert.ok(
      compared.has(script) || (NOT_COMPARED[script] ?? "").length > 0,
      `${script} is neither compared with Claude Code nor listed with a reason`,
    );
  }
});

Deno.test("every known difference is a row of docs/SCRIPTS.md's differences table", async () => {
  const rows = await documentedDifferences();
  for (const id of Object.keys(DIFFERENCES)) assert.ok(rows.has(id), `docs row for ${id}`);
  for (const c of CASES) {
    for (const id of c.differences ?? []) assert.ok(DIFFERENCES[id], `difference ${id} is known`);
  }
});

realToolTest(
  "claude",
  "every fixture script gives the same calls, logs and result as under svc",
  async (bin) => {
    await using project = await oracleProject();
    const started = Date.now();
    const failures: string[] = [];
    for (const c of CASES) {
      const path = projectPath(c.script);
      const script = {
        project: project.path,
        path,
        ...(c.args !== undefined ? { args: c.args } : {}),
      };
      await using home = await agentHome();
      await using svcHome = await tempDir("svc-oracle-home-");
      const cc = numberedByLabel(await observeClaude(script, { bin, home }));
      const svc = numberedByLabel(await observeSvc(script, svcHome.path));
      // A folder to keep both observations of every case in, for a person reading a failure.
      const dump = Deno.env.get("SVC_ORACLE_DUMP");
      if (dump) {
        const name = `${c.script}${c.args ?? ""}`.replace(/[^A-Za-z0-9]+/g, "_").slice(0, 80);
        await Deno.writeTextFile(`${dump}/${name}.json`, JSON.stringify({ cc, svc }, null, 1));
      }
      let expected = cc;
      for (const id of c.differences ?? []) {
        const next = DIFFERENCES[id]!(expected, svc);
        if (JSON.stringify(next) === JSON.stringify(expected)) {
          failures.push(`${c.script} ${c.args ?? ""}: difference ${id} no longer occurs`);
        }
        expected = next;
      }
      try {
        assert.deepEqual(svc, expected);
      } catch (error) {
        failures.push(`${c.script} ${c.args ?? ""}: ${(error as Error).message}`);
      }
    }
    console.log(`compared ${CASES.length} runs in ${Math.round((Date.now() - started) / 1000)} s`);
    assert.deepEqual(failures, []);
  },
);
