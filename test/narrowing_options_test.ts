/**
 * `agent()`'s narrowing options, `disallowedTools` and `bashCommandClamp`: checked as Claude
 * Code 2.1.337 checks them (its own messages), refused when they are not plain data (in the
 * guest, before the call is sent), never dropped, carried to the provider, merged with an agent
 * type's denies, and mapped onto Claude Code's command line; and an unknown option that may
 * restrict the agent is refused rather than ignored.
 */
import assert from "node:assert/strict";
import {
  a2aAgentProvider,
  createDispatcher,
  createFakeProvider,
  type Provider,
} from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { harnessRequest } from "./harness_helpers.ts";
import { CLAUDE } from "../src/dispatch/harness/claude.ts";
import type { HarnessCall } from "../src/dispatch/harness/run_harness.ts";
import { clampHookSettings } from "../src/dispatch/harness/claude_clamp_hook.ts";
import { geminiNarrowingProblem, geminiPolicies } from "../src/dispatch/harness/gemini_policy.ts";
import {
  type AgentOptions,
  NARROWING_LIMITS,
  notPlainDataMessage,
  parseAgentCall,
} from "../src/schemas/mod.ts";
import { notPlainDataMessage as guestMessage } from "../guest/plain_options.js";
import { narration, runScript } from "./helpers.ts";

function refusal(options: Record<string, unknown>): string {
  const parsed = parseAgentCall({ prompt: "p", options });
  assert.equal(parsed.ok, false, JSON.stringify(options));
  return (parsed as { message: string }).message;
}

const UN_NARROWED = "Refusing the spawn rather than running it un-narrowed.";

Deno.test("a disallowedTools that is no array of trimmed, non-empty names is refused in Claude Code's words", () => {
  assert.equal(
    refusal({ disallowedTools: "Bash" }),
    `agent() opts.disallowedTools must be an array of non-empty tool-name strings (e.g. ['Bash', 'Write']); got string. ${UN_NARROWED}`,
  );
  for (const bad of [[""], [" Bash"], ["Bash "], [3], [null]]) {
    assert.equal(
      refusal({ disallowedTools: bad }),
      `agent() opts.disallowedTools must be an array of non-empty tool-name strings (e.g. ['Bash', 'Write']); got an array with non-string, empty, or whitespace-padded entries. ${UN_NARROWED}`,
      JSON.stringify(bad),
    );
  }
});

Deno.test("a disallowedTools entry with a wildcard or the wrong case is refused, as it would deny nothing", () => {
  assert.match(
    refusal({ disallowedTools: ["Ba*"] }),
    /^agent\(\) opts\.disallowedTools entry 'Ba\*' cannot match any tool — '\*' is not a deny wildcard outside mcp__ server specs\..* un-narrowed\.$/,
  );
  assert.equal(
    refusal({ disallowedTools: ["bash"] }),
    "agent() opts.disallowedTools entry 'bash' does not match any tool, but 'Bash' exists — tool names are case-sensitive. Refusing the spawn rather than running it with this deny silently dropped.",
  );
  assert.ok(parseAgentCall({ prompt: "p", options: { disallowedTools: ["mcp__*"] } }).ok);
});

Deno.test("a bashCommandClamp entry that is no Bash(<command or prefix>) rule is refused in Claude Code's words", () => {
  assert.equal(
    refusal({ bashCommandClamp: {} }),
    "agent() opts.bashCommandClamp must be an array of non-empty strings; got object. Refusing the spawn rather than running it un-clamped.",
  );
  const entry = (given: string, parsed: string, tail: string) =>
    `agent() opts.bashCommandClamp entry '${given}' must be a 'Bash(<command or prefix>)' permission rule (tool name case-sensitive, non-empty content with no leading/trailing whitespace inside the parens); it parses to tool '${parsed}'${tail}. Refusing the spawn rather than running it with an inert clamp entry.`;
  assert.equal(
    refusal({ bashCommandClamp: ["Bash"] }),
    entry("Bash", "Bash", " with no rule content"),
  );
  assert.equal(
    refusal({ bashCommandClamp: ["Bash()"] }),
    entry("Bash()", "Bash", " with no rule content"),
  );
  assert.equal(
    refusal({ bashCommandClamp: ["Bash( ls)"] }),
    entry("Bash( ls)", "Bash", " with whitespace-padded rule content"),
  );
  assert.equal(refusal({ bashCommandClamp: ["bash(ls)"] }), entry("bash(ls)", "bash", ""));
  assert.equal(refusal({ bashCommandClamp: ["Write(x)"] }), entry("Write(x)", "Write", ""));
});

Deno.test("a clamp beside a Bash deny is refused: it would keep no command", () => {
  assert.match(
    refusal({ disallowedTools: ["Bash"], bashCommandClamp: ["Bash(ls:*)"] }),
    /^agent\(\) opts\.bashCommandClamp can bind nothing: .* Drop the clamp or the Bash deny\.$/,
  );
  assert.match(
    refusal({ disallowedTools: ["Bash(*)"], bashCommandClamp: ["Bash(ls:*)"] }),
    /can bind nothing/,
  );
  assert.ok(
    parseAgentCall({
      prompt: "p",
      options: { disallowedTools: ["Bash(rm:*)"], bashCommandClamp: ["Bash(ls:*)"] },
    }).ok,
  );
});

Deno.test("the narrowing options are bounded in entries and characters, and their messages are clipped", () => {
  const many = Array.from({ length: NARROWING_LIMITS.entries + 1 }, (_, i) => `Tool${i}`);
  assert.match(
    refusal({ disallowedTools: many }),
    /has 513 entries, more than 512\. .*un-narrowed/,
  );
  const long = `Bash(${"x".repeat(NARROWING_LIMITS.entryChars)})`;
  const message = refusal({ bashCommandClamp: [long] });
  assert.match(message, /is longer than 1024 characters\. .*un-clamped/);
  assert.ok(message.length < 400, message);
  const escape = refusal({ disallowedTools: ["ba\u001b[31msh\nx*"] });
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(escape, /[\u0000-\u001f]/);
});

Deno.test("well-formed narrowing options pass as given", () => {
  const parsed = parseAgentCall({
    prompt: "p",
    options: {
      disallowedTools: ["Write", "Bash(rm:*)", "mcp__github"],
      bashCommandClamp: ["Bash(npm test)", "Bash(git diff:*)"],
    },
  });
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.call.options.bashCommandClamp, ["Bash(npm test)", "Bash(git diff:*)"]);
});

Deno.test("the guest's plain-data refusal says what svc's schemas say", () => {
  assert.equal(guestMessage("opts.disallowedTools"), notPlainDataMessage("opts.disallowedTools"));
});

/** The fake provider, recording the options each call reached it with. */
function recorder(): { provider: Provider; seen: AgentOptions[] } {
  const fake = createFakeProvider();
  const seen: AgentOptions[] = [];
  return {
    seen,
    provider: {
      ...fake,
      dispatch: (request) => {
        seen.push(request.options);
        return fake.dispatch(request);
      },
    },
  };
}

function dispatcherOf(provider: Provider) {
  return { dispatcher: createDispatcher({ providers: [provider], fakeLatencyMs: 0 }) };
}

Deno.test("options that are not plain data are refused in the guest, and nothing is dispatched", async () => {
  const cases: Record<string, string> = {
    "a Proxy": `new Proxy({ disallowedTools: ["Bash"] }, {})`,
    "a getter": `{ get disallowedTools() { return ["Bash"]; } }`,
    "an inherited option": `Object.create({ bashCommandClamp: ["Bash(ls:*)"] })`,
    "a non-enumerable option": `Object.defineProperty({}, "disallowedTools", { value: ["Bash"] })`,
    "a Proxy array": `{ disallowedTools: new Proxy(["Bash"], {}) }`,
    "an element getter":
      `{ bashCommandClamp: Object.defineProperty([], 0, { get: () => "Bash(ls:*)", enumerable: true }) }`,
    "an object agentType": `{ agentType: { toString: () => "Explore" } }`,
  };
  const r = recorder();
  const script = Object.entries(cases).map(([what, options]) =>
    `try { await agent(${
      JSON.stringify(what)
    }, ${options}); out.push("ran"); } catch (e) { out.push(e.message); }`
  ).join("\n");
  const status = await runScript(
    `const out = []; ${script}; return out;`,
    {},
    dispatcherOf(r.provider),
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const where = ["opts", "opts.disallowedTools", "opts.bashCommandClamp", "opts.disallowedTools"];
  assert.deepEqual(status.result, [
    notPlainDataMessage(where[0]!),
    notPlainDataMessage(where[1]!),
    notPlainDataMessage(where[2]!),
    notPlainDataMessage(where[3]!),
    notPlainDataMessage("opts.disallowedTools"),
    notPlainDataMessage("opts.bashCommandClamp"),
    notPlainDataMessage("opts.agentType"),
  ]);
  assert.equal(r.seen.length, 0);
});

Deno.test("the narrowing options reach the provider as given; a malformed one ends the call before it", async () => {
  const r = recorder();
  const status = await runScript(
    `const a = await agent("narrowed", { disallowedTools: ["Bash"], bashCommandClamp: undefined });
     let b;
     try { await agent("malformed", { disallowedTools: ["bash"] }); } catch (e) { b = e.message; }
     return [a, b];`,
    {},
    dispatcherOf(r.provider),
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(r.seen.map((o) => o.disallowedTools), [["Bash"]]);
  assert.match(String((status.result as string[])[1]), /entry 'bash' does not match any tool/);
  assert.deepEqual(narration(status, "warning"), []);
});

Deno.test("an unknown option that may restrict the agent is refused; one that cannot is ignored", async () => {
  const r = recorder();
  const status = await runScript(
    `const out = [];
     for (const options of [{ allowedTools: ["Read"] }, { maxTurns: 3 }, { denyNetwork: true }]) {
       try { await agent("x", options); out.push("ran"); } catch (e) { out.push(e.message); }
     }
     out.push(await agent("colour", { colour: "red" }));
     return out;`,
    {},
    dispatcherOf(r.provider),
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const [allowed, turns, network, colour] = status.result as string[];
  assert.equal(
    allowed,
    "agent(): unknown option 'allowedTools' may restrict the agent, and svc does not know it: the call is refused rather than run without the restriction",
  );
  assert.match(String(turns), /unknown option 'maxTurns' may restrict the agent/);
  assert.match(String(network), /unknown option 'denyNetwork' may restrict the agent/);
  assert.equal(colour, "fake response to: colour");
  assert.equal(r.seen.length, 1);
});

Deno.test("an agent type's disallowedTools join the call's, and a clamp on a type without Bash is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-narrowing-" });
  try {
    await Deno.mkdir(`${dir}/.claude/agents`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/.claude/agents/careful.md`,
      "---\nname: careful\ndisallowedTools: Bash, WebFetch\n---\nBe careful.\n",
    );
    await Deno.writeTextFile(
      `${dir}/.claude/agents/broken.md`,
      "---\nname: broken\ndisallowedTools: [bash]\n---\nx\n",
    );
    const r = recorder();
    const status = await runScript(
      `const out = [await agent("a", { agentType: "careful", disallowedTools: ["Write"] })];
       for (const options of [
         { agentType: "careful", bashCommandClamp: ["Bash(ls:*)"] },
         { agentType: "Explore", bashCommandClamp: ["Bash(ls:*)"] },
         { agentType: "broken" },
       ]) {
         try { await agent("b", options); out.push("ran"); } catch (e) { out.push(e.message); }
       }
       return out;`,
      { workdir: dir },
      dispatcherOf(r.provider),
    );
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    assert.deepEqual(r.seen.map((o) => o.disallowedTools), [["Write", "Bash", "WebFetch"]]);
    const [, careful, explore, broken] = status.result as string[];
    assert.match(String(careful), /^agent\(\) opts\.bashCommandClamp can bind nothing/);
    assert.match(String(explore), /^agent\(\) opts\.bashCommandClamp can bind nothing/);
    assert.match(String(broken), /front matter disallowedTools: .*entry 'bash' does not match/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function claudeCall(sandbox: HarnessCall["sandbox"], narrowing: HarnessCall["narrowing"]) {
  return CLAUDE.args({ provider: "claude", prompt: "p", sandbox, narrowing, extraArgs: [] });
}

function settingsOf(args: string[]): Record<string, unknown> {
  const flag = args.find((arg) => arg.startsWith("--settings="));
  assert.ok(flag, args.join(" "));
  return JSON.parse(flag.slice("--settings=".length));
}

Deno.test("Claude Code gets disallowedTools as deny rules, and a clamp as allow rules and a hook, never bypass", () => {
  const deny = claudeCall("write", {
    disallowedTools: ["Bash", "Bash(rm:*)"],
    bashCommandClamp: [],
  });
  assert.deepEqual(settingsOf(deny), { permissions: { deny: ["Bash", "Bash(rm:*)"] } });
  const full = claudeCall("full", { disallowedTools: [], bashCommandClamp: ["Bash(ls:*)"] });
  assert.ok(!full.includes("--dangerously-skip-permissions"), full.join(" "));
  assert.deepEqual(
    full.slice(full.indexOf("--permission-mode"), full.indexOf("--permission-mode") + 2),
    [
      "--permission-mode",
      "acceptEdits",
    ],
  );
  const settings = settingsOf(full) as {
    permissions: { allow: string[]; deny: string[] };
    hooks: unknown;
  };
  assert.deepEqual(settings.permissions.allow, ["Bash(ls:*)", "WebFetch", "WebSearch"]);
  assert.deepEqual(settings.permissions.deny, ["Monitor", "PowerShell"], "other shells");
  assert.ok(settings.hooks, JSON.stringify(settings));
  const plain = claudeCall("full", undefined);
  assert.ok(plain.includes("--dangerously-skip-permissions"));
  assert.ok(!plain.some((arg) => arg.startsWith("--settings=")));
});

/** Runs the clamp hook as Claude Code would, and returns its exit status. */
async function hookVerdict(clamp: string[], command: unknown, tool = "Bash"): Promise<number> {
  const settings = clampHookSettings(Deno.execPath(), clamp) as {
    PreToolUse: { hooks: { command: string }[] }[];
  };
  const child = new Deno.Command("sh", {
    args: ["-c", settings.PreToolUse[0]!.hooks[0]!.command],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(JSON.stringify({ tool_name: tool, tool_input: { command } })),
  );
  await writer.close();
  return (await child.status).code;
}

Deno.test("the clamp hook lets through only the clamp's command forms, and denies when in doubt", async () => {
  const clamp = ["Bash(npm test)", "Bash(git diff:*)", "Bash(git log * --oneline)"];
  const allowed = ["npm test", "git diff", "git diff --stat", "git log -3 --oneline"];
  const denied = [
    "npm test --watch",
    "git difftool",
    "git diff; rm -rf x",
    "git diff && touch x",
    "git diff $(touch x)",
    "git diff > out",
    "git diff `touch x`",
    "git diff\ntouch x",
    "git log -3 --oneline; touch x",
    "ls",
  ];
  for (const command of allowed) assert.equal(await hookVerdict(clamp, command), 0, command);
  for (const command of denied) assert.equal(await hookVerdict(clamp, command), 2, command);
  assert.equal(await hookVerdict(clamp, 42), 2, "no command string");
  assert.equal(await hookVerdict(clamp, "anything", "Read"), 0, "other tools are not its concern");
  const slow = `${"a*".repeat(400)}b`;
  assert.equal(
    await hookVerdict([`Bash(${slow})`], "a".repeat(4000)),
    2,
    "no backtracking blow-up",
  );
});

Deno.test("Gemini's denies sit in a policy file of svc's own strings, apart from the clamp's commands", () => {
  const call: HarnessCall = {
    provider: "gemini",
    prompt: "p",
    sandbox: "write",
    extraArgs: [],
    stateDir: "/state",
    narrowing: {
      disallowedTools: ["Write"],
      bashCommandClamp: ['Bash(echo "a\\b")', "Bash(ls:*)"],
    },
  };
  const [denies, allows] = geminiPolicies(call);
  assert.doesNotMatch(denies!, /echo|ls/);
  assert.match(denies!, /toolName = \["write_file", "invoke_agent"\]\ndecision = "deny"/);
  // The exact rule matches the command's JSON as Gemini matches it, and nothing longer.
  const regex = JSON.parse(/commandRegex = (.*)/.exec(allows!)![1]!);
  const matches = (command: string) =>
    new RegExp(`"command":"${regex}`).test(JSON.stringify({ command }));
  assert.ok(matches('echo "a\\b"'));
  assert.ok(!matches('echo "a\\b" x') && !matches("echo a"));
  assert.match(allows!, /commandPrefix = "ls"/);
  assert.match(
    geminiNarrowingProblem({
      ...call,
      narrowing: { disallowedTools: [], bashCommandClamp: ["Bash(\ud800)"] },
    })!,
    /lone surrogate/,
  );
  assert.match(
    geminiNarrowingProblem({
      ...call,
      narrowing: { disallowedTools: ["mcp__x"], bashCommandClamp: [] },
    })!,
    /no tool known to be "mcp__x"/,
  );
});

Deno.test("a remote A2A agent refuses a narrowed call before it connects: its tools are beyond svc's reach", async () => {
  // Nothing listens on the port: a refusal that came after connecting would say so instead.
  const provider = a2aAgentProvider({ name: "remote", url: "http://127.0.0.1:9" });
  for (const options of [{ disallowedTools: ["Bash"] }, { bashCommandClamp: ["Bash(ls:*)"] }]) {
    const error = await provider.dispatch(harnessRequest("p", { options })).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof SvcError, String(error));
    assert.equal(error.code, "invalid_argument");
    assert.match(error.message, /^Cannot dispatch to remote: the call restricts its agent/);
  }
});
