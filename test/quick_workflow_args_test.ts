/**
 * The lean program reads a plain `svc workflow run` (and `workflow work`) without commander,
 * so that a run never starts Deno's Node layer: what it reads must be exactly what commander
 * reads from the same words, and anything else must be left to commander.
 */
import assert from "node:assert/strict";
import { Command } from "commander";
import { quickWorkflowArgs } from "../cli/quick_workflow_args.ts";
import { addWorkflowRunCommands } from "../cli/workflow_commands.ts";

/** What commander hands the action of `argv`: the command, its arguments and its options. */
async function commanderReads(argv: string[]): Promise<unknown> {
  let seen: unknown;
  const silent = { writeOut: () => {}, writeErr: () => {} };
  const program = new Command("svc").exitOverride().configureOutput(silent);
  const workflow = program.command("workflow").exitOverride().configureOutput(silent);
  addWorkflowRunCommands(workflow, () => Promise.resolve());
  for (const command of workflow.commands) command.configureOutput(silent);
  program.hook("preAction", (_root, action) => {
    seen = { command: action.name(), args: action.args, flags: { ...action.opts() } };
    throw new Error("read");
  });
  await program.parseAsync(argv, { from: "user" }).catch(() => {});
  return seen;
}

/** What the quick reader makes of `argv`, in the shape of {@linkcode commanderReads}. */
function quickReads(argv: string[]): unknown {
  const quick = quickWorkflowArgs(argv);
  if (quick === undefined) return undefined;
  return quick.command === "run"
    ? { command: "run", args: [quick.script], flags: { ...quick.flags } }
    : { command: "work", args: [quick.runId], flags: {} };
}

Deno.test("a plain workflow run or work is read exactly as commander reads it", async () => {
  const plain = [
    ["workflow", "run", "a.js"],
    ["workflow", "run", "a.js", "--fake-dispatch"],
    ["workflow", "run", "--fake-dispatch", "a.js", "--json"],
    ["workflow", "run", "-", "--args", '{"x": 1}'],
    ["workflow", "run", "a.js", "--args=-1", "--title="],
    [
      "workflow",
      "run",
      "--timeout=5",
      "--isolation",
      "microvm",
      "--sandbox-default=write",
      "--sandbox-max",
      "full",
      "--workdir",
      "/tmp/w d",
      "a.js",
      "--budget-tokens",
      "100",
      "--budget-usd",
      "1.5",
      "--max-agents",
      "3",
      "--concurrency",
      "2",
      "--resume-from",
      "run_1",
      "--title",
      "a title",
      "--description",
      "what=for",
      "--output",
      "tools",
    ],
    ["workflow", "work", "run_1"],
  ];
  for (const argv of plain) {
    const quick = quickReads(argv);
    assert.notEqual(quick, undefined, `read quickly: ${argv.join(" ")}`);
    assert.deepEqual(quick, await commanderReads(argv), argv.join(" "));
  }
});

Deno.test("anything but a plain workflow run or work is left to commander", () => {
  const others = [
    ["workflow", "run", "--help"],
    ["workflow", "run", "a.js", "-h"],
    ["workflow", "run", "a.js", "--tiemout", "3"],
    ["workflow", "run", "a.js", "--timeout", "3", "--timeout", "4"],
    ["workflow", "run", "a.js", "--isolation", "vm"],
    ["workflow", "run", "a.js", "--sandbox-max=root"],
    ["workflow", "run", "a.js", "--json=true"],
    ["workflow", "run", "a.js", "--title", "-x"],
    ["workflow", "run", "a.js", "--timeout"],
    ["workflow", "run", "--", "a.js"],
    ["workflow", "run"],
    ["workflow", "run", "a.js", "b.js"],
    ["workflow", "run", "a.js", "--constructor", "x"],
    ["workflow", "run", "a.js", "--constructor"],
    ["workflow", "run", "a.js", "--toString=x"],
    ["workflow", "work"],
    ["workflow", "work", "-x"],
    ["workflow", "work", "run_1", "run_2"],
    ["workflow", "resume", "run_1"],
    ["workflow", "list"],
    ["run", "a.js"],
    ["--version"],
    [],
  ];
  for (const argv of others) assert.equal(quickWorkflowArgs(argv), undefined, argv.join(" "));
});
