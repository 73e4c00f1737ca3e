/**
 * Claude Code workflow scripts, run unchanged. The fixtures under
 * test/fixtures/claude_workflows/ are written in Claude Code's dialect after real public scripts
 * (SOURCES.md names each original); they sit in a project's `.claude/workflows/` with the agent
 * types they name in `.claude/agents/`, exactly where Claude Code looks for them, and are run by
 * name through `svc workflow run <name> --fake-dispatch` (the launcher, its narrow grants).
 */
import assert from "node:assert/strict";
import { fixture, runCli, tempDir } from "./helpers.ts";

/** A temporary project holding the fixtures as Claude Code keeps them. */
async function claudeProject(): Promise<{ path: string } & AsyncDisposable> {
  const dir = await tempDir("svc-claude-project-");
  await Deno.mkdir(`${dir.path}/.claude/workflows`, { recursive: true });
  await Deno.mkdir(`${dir.path}/.claude/agents`, { recursive: true });
  for (const entry of Deno.readDirSync(fixture("claude_workflows"))) {
    if (entry.name.endsWith(".js")) {
      await Deno.copyFile(
        fixture(`claude_workflows/${entry.name}`),
        `${dir.path}/.claude/workflows/${entry.name}`,
      );
    }
  }
  for (const entry of Deno.readDirSync(fixture("claude_workflows/agents"))) {
    await Deno.copyFile(
      fixture(`claude_workflows/agents/${entry.name}`),
      `${dir.path}/.claude/agents/${entry.name}`,
    );
  }
  return dir;
}

interface Case {
  name: string;
  args?: string;
  calls: number;
  result: (value: Record<string, unknown>) => void;
}

const CASES: Case[] = [
  {
    name: "review_dimensions",
    args: '{"base":"main"}',
    calls: 9,
    result(value) {
      assert.deepEqual(value.dimensions, ["correctness", "security", "tests", "performance"]);
      assert.equal(value.confirmed, 4);
      assert.match(String(value.report), /^fake response to: Write a short review report/);
    },
  },
  {
    name: "deep_research",
    args: "Which sorting algorithm does V8 use for Array.prototype.sort?",
    calls: 14,
    result(value) {
      assert.equal(value.question, "Which sorting algorithm does V8 use for Array.prototype.sort?");
      assert.deepEqual([value.angles, value.claims, value.verified], [3, 3, 3]);
    },
  },
  {
    name: "security_review",
    calls: 7,
    result(value) {
      assert.deepEqual(value.lenses, ["baseline", "llm", "agentic"]);
      assert.equal(value.findings, 3);
      assert.equal((value.confirmed as unknown[]).length, 3);
    },
  },
  {
    name: "dev_cycle",
    args: '{"feature":"F-001","maxRounds":2}',
    calls: 10,
    result: (value) =>
      assert.deepEqual(value, { feature: "F-001", rounds: 2, clean: false, fixed: 4 }),
  },
  {
    name: "dev_cycle",
    args: "F-001",
    calls: 14,
    result: (value) =>
      assert.deepEqual(value, { feature: "F-001", rounds: 3, clean: false, fixed: 6 }),
  },
  {
    name: "hyper_research",
    args: '{"contextDoc":"docs/context.md"}',
    calls: 6,
    result: (value) =>
      assert.deepEqual(value, { questions: 2, completed: 2, failed: [], themes: ["themes-0"] }),
  },
  {
    // workflow({ scriptPath: ".claude/workflows/topic_research.js" }), from the project's root.
    name: "hyper_research",
    args: '{"contextDoc":"docs/context.md","byPath":true}',
    calls: 6,
    result: (value) => assert.deepEqual(value.failed, []),
  },
  {
    name: "topic_research",
    args: '{"topic":"CRDTs"}',
    calls: 2,
    result: (value) => assert.deepEqual(value, { topic: "CRDTs", score: 1 }),
  },
  {
    name: "map_codebase",
    calls: 5,
    result(value) {
      assert.deepEqual([value.mode, value.groups, value.enriched], ["full", 3, 3]);
    },
  },
  {
    name: "screen",
    args: "AAPL MSFT --max 2",
    calls: 4,
    result(value) {
      assert.deepEqual(value.candidates, ["AAPL", "MSFT"]);
      assert.equal(value.qualified, 2);
    },
  },
];

for (const c of CASES) {
  Deno.test(`Claude Code's ${c.name} (args ${c.args ?? "none"}) runs unchanged and makes its ${c.calls} calls`, async () => {
    await using project = await claudeProject();
    const result = await runCli(
      [
        "workflow",
        "run",
        c.name,
        "--fake-dispatch",
        "--json",
        ...(c.args !== undefined ? ["--args", c.args] : []),
      ],
      { cwd: project.path },
    );
    assert.equal(result.code, 0, result.stderr);
    const status = JSON.parse(result.stdout);
    assert.equal(status.state, "succeeded", result.stderr);
    assert.equal(status.journal.calls, c.calls, result.stderr);
    assert.equal(status.journal.failed + status.journal.skipped, 0, "no call failed or refused");
    assert.deepEqual(status.script_errors, [], "no thunk or stage threw");
    assert.doesNotMatch(result.stderr, /warning|refused|threw/, result.stderr);
    c.result(status.result);
  });
}

Deno.test("a Claude Code script that needs args fails loudly without them, with its resume command", async () => {
  await using project = await claudeProject();
  const result = await runCli(["workflow", "run", "dev_cycle", "--fake-dispatch"], {
    cwd: project.path,
  });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /failed: Error: dev-cycle needs args = \{feature: "<feature_id>"\}/);
  assert.match(result.stderr, /^svc: resume it with: svc workflow run .*dev_cycle\.js/m);
});

Deno.test("svc workflow run <name> says where it looked when no saved workflow has that name", async () => {
  await using project = await claudeProject();
  const result = await runCli(["workflow", "run", "no_such_flow"], { cwd: project.path });
  assert.equal(result.code, 2);
  assert.match(
    result.stderr,
    /^svc: Cannot read script 'no_such_flow': no such file, and no saved workflow of that name \(Cannot find workflow 'no_such_flow': looked for meta\.name 'no_such_flow' and no_such_flow\.js in the project's \.claude\/workflows\/ folder, /m,
  );
});
