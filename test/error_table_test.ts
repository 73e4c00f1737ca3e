import assert from "node:assert/strict";
import { CommanderError } from "commander";
import {
  ERROR_CODES,
  ERROR_TABLE,
  EXIT_STATUS,
  exitStatusOf,
  httpStatusOf,
  isErrorCode,
  jsonRpcCodeOf,
  SvcError,
  toSvcError,
} from "../src/errors/mod.ts";
import type { RunState } from "../src/ledger/mod.ts";
import { EXIT, exitStatusOfError, exitStatusOfState } from "../cli/exit_status.ts";
import { UsageError } from "../cli/workflow_input.ts";
import { fixture, ROOT, runCli, tempDir } from "./helpers.ts";

/** The table as docs/ERRORS.md shows it, row by row: the documentation is what the code must match. */
async function documentedTable(): Promise<Map<string, [number, number, number, string]>> {
  const text = await Deno.readTextFile(`${ROOT}/docs/ERRORS.md`);
  const rows = new Map<string, [number, number, number, string]>();
  for (
    const match of text.matchAll(/^\| `(\w+)` +\| (\d+) +\| (-\d+) +\| (\d+) +\| (.+?) +\|$/gm)
  ) {
    const [, code, http, rpc, exit, meaning] = match;
    rows.set(code!, [Number(http), Number(rpc), Number(exit), meaning!]);
  }
  return rows;
}

Deno.test("every error code answers as docs/ERRORS.md says: SvcError's status, the JSON-RPC code and the exit status", async () => {
  const documented = await documentedTable();
  assert.deepEqual([...ERROR_CODES].sort(), [...documented.keys()].sort());
  for (const code of ERROR_CODES) {
    const [http, jsonRpc, exit, meaning] = documented.get(code)!;
    const row = ERROR_TABLE[code];
    assert.deepEqual([row.http, row.jsonRpc, row.exit, row.meaning], [
      http,
      jsonRpc,
      exit,
      meaning,
    ]);
    const error = new SvcError(code, `Cannot test: ${code}`);
    assert.equal(error.status, http, `${code}: SvcError's default status`);
    assert.equal(httpStatusOf(code), http, code);
    assert.equal(jsonRpcCodeOf(code), jsonRpc, code);
    assert.equal(exitStatusOf(code), exit, code);
    assert.equal(exitStatusOfError(error), exit, `${code}: the command line's exit`);
    assert.ok(isErrorCode(code));
  }
  assert.ok(!isErrorCode("toString"), "no inherited name passes for a code");
  assert.ok(!isErrorCode("teapot"));
});

Deno.test("JSON-RPC codes are the standard ones or svc's own in the server-error range, clear of A2A's", () => {
  const own = new Map<number, string>();
  for (const code of ERROR_CODES) {
    const rpc = jsonRpcCodeOf(code);
    if (rpc === -32602 || rpc === -32603) continue;
    assert.ok(rpc <= -32000 && rpc >= -32099, `${code}: ${rpc} is in the server-error range`);
    assert.ok(!own.has(rpc), `${code} and ${own.get(rpc)} share ${rpc}`);
    own.set(rpc, code);
  }
  // A2A v1.0 §5.4: TaskNotFound -32001 (HTTP 404) and TaskNotCancelable -32002 (HTTP 409); the
  // rest of -32001..-32009 mean other things there, so no other svc code may use them.
  assert.equal(own.get(-32001), "not_found");
  assert.equal(own.get(-32002), "conflict");
  for (let rpc = -32009; rpc <= -32003; rpc++) assert.ok(!own.has(rpc), `${rpc} is A2A's`);
  assert.equal(jsonRpcCodeOf("internal"), -32603);
});

Deno.test("a thrown value that is no SvcError exits as internal; commander's help is no error, its usage errors are", () => {
  assert.equal(exitStatusOfError(new Error("boom")), exitStatusOf("internal"));
  assert.equal(exitStatusOfError(toSvcError("boom")), exitStatusOf("internal"));
  assert.equal(exitStatusOfError(new UsageError("Cannot use it")), EXIT.usage);
  assert.equal(exitStatusOfError(new CommanderError(2, "commander.unknownOption", "x")), 2);
  assert.equal(exitStatusOfError(new CommanderError(0, "commander.helpDisplayed", "x")), 0);
  assert.equal(exitStatusOfError(new CommanderError(0, "commander.version", "x")), 0);
});

Deno.test("a finished run or task exits by its state alone: 0 succeeded, 124 timeout, 1 otherwise", () => {
  const expected: Record<RunState, number> = {
    succeeded: 0,
    timeout: 124,
    failed: 1,
    cancelled: 1,
    interrupted: 1,
    queued: 1,
    running: 1,
  };
  for (const [state, exit] of Object.entries(expected)) {
    assert.equal(exitStatusOfState(state as RunState), exit, state);
  }
  assert.equal(EXIT_STATUS.timeout, exitStatusOf("provider_timeout"));
});

Deno.test("an unknown id exits with not_found's status from every command that takes one", async () => {
  await using home = await tempDir();
  const notFound = exitStatusOf("not_found");
  const cases: Array<[string[], RegExp]> = [
    [["task", "status", "task_0000000000unknown"], /^svc: Cannot find task 'task_0+unknown'/m],
    [["task", "cancel", "task_0000000000unknown"], /^svc: Cannot cancel task 'task_0+unknown'/m],
    [["session", "show", "nope"], /^svc: Cannot find session 'nope': no such session$/m],
    [["worktree", "remove", "wt_nope"], /^svc: Cannot remove worktree 'wt_nope'/m],
    [
      ["workflow", "run", fixture("three_steps.js"), "--resume-from", "run_0000000000unknown"],
      /^svc: Cannot resume from run 'run_0+unknown': no such run$/m,
    ],
  ];
  for (const [args, message] of cases) {
    const result = await runCli(args, { home: home.path });
    assert.equal(result.code, notFound, `${args.join(" ")}: exit ${result.code}\n${result.stderr}`);
    assert.equal(result.code, 3);
    assert.match(result.stderr, message, args.join(" "));
    assert.equal(result.stdout, "", args.join(" "));
  }
});

Deno.test("usage errors and refused requests exit with the table's usage status", async () => {
  await using home = await tempDir();
  const cases: Array<[string[], string, RegExp]> = [
    [["task", "list", "--frobnicate"], "invalid_argument", /unknown option '--frobnicate'/],
    [
      ["history", "--limit", "none"],
      "invalid_argument",
      /^svc: Cannot use --limit 'none': it must be a whole number above 0$/m,
    ],
    [
      ["dispatch", "", "--wait", "--fake-dispatch"],
      "invalid_request",
      /^svc: Cannot dispatch: 'prompt' must not be empty$/m,
    ],
    [
      ["workflow", "run", fixture("bad_meta.js")],
      "invalid_script",
      /meta must be a pure literal/,
    ],
  ];
  for (const [args, code, message] of cases) {
    const result = await runCli(args, { home: home.path });
    const expected = exitStatusOf(code as "invalid_argument");
    assert.equal(result.code, expected, `${args.join(" ")}: exit ${result.code}\n${result.stderr}`);
    assert.equal(result.code, 2);
    assert.match(result.stderr, message, args.join(" "));
  }
});

Deno.test("working on a task that has ended exits with conflict's status; dispatch --wait exits by the task's state", async () => {
  await using home = await tempDir();
  const done = await runCli(["dispatch", "once", "--wait", "--fake-dispatch", "--json"], {
    home: home.path,
  });
  assert.equal(done.code, exitStatusOfState("succeeded"), done.stderr);
  const { task_id } = JSON.parse(done.stdout);
  const again = await runCli(["task", "work", task_id], { home: home.path });
  assert.equal(again.code, exitStatusOf("conflict"), again.stderr);
  assert.equal(again.code, 4);
  assert.match(again.stderr, /^svc: Cannot work on task '\w+': it is succeeded$/m);

  const slow = await runCli(["dispatch", "slow", "--wait", "--timeout", "1"], {
    home: home.path,
    env: { SVC_FAKE_LATENCY_MS: "60000" },
  });
  assert.equal(slow.code, exitStatusOfState("timeout"), slow.stderr);
  assert.equal(slow.code, 124);
  assert.match(slow.stderr, /^svc: task task_\w+ timeout: /m);
});
