/**
 * Hostile scripts, run together on one host: scripts generated with fast-check from a small
 * grammar of hostile behaviours (wide fan-outs, deep nesting, throwing thunks, floods of logs and
 * output, forged frames on standard output, endless loops, calls past every limit), started at
 * once on one run manager beside a few benign runs. Each run must end in the state and with the
 * error its behaviour calls for, within its limits; forged frames must change nothing; the benign
 * runs must return their exact results; the host's memory must stay bounded and no guest may be
 * left behind.
 *
 * `SVC_FUZZ_SEED` replays a batch (a failure prints its seed and the run's script);
 * `SVC_FUZZ_SCALE` multiplies the number of hostile runs.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { createDispatcher, type Dispatcher } from "../src/dispatch/mod.ts";
import type { RunStatus } from "../src/ledger/mod.ts";
import type { JsonValue } from "../src/schemas/mod.ts";
import { LOCAL, processesMentioning, testManager } from "./helpers.ts";

const SEED = Number(Deno.env.get("SVC_FUZZ_SEED") ?? 20261122);
const SCALE = Number(Deno.env.get("SVC_FUZZ_SCALE") ?? 1);
/** Hostile runs in one batch, at scale 1. */
const RUNS = 60;

/**
 * The host's limits, small so that every hostile run reaches them quickly. Each is the
 * run manager's option of the same name; the defaults are documented in docs/SCRIPTS.md.
 */
const LIMITS = {
  maxRefusedCalls: 40,
  maxNarration: 300,
  maxNarrationBytes: 64 * 1024,
  maxSecurityEvents: 30,
  maxJournalBytes: 256 * 1024,
  maxBlobBytes: 256 * 1024,
  frameLimit: 128 * 1024,
  heapMb: 64,
} as const;
/** Thrown parallel()/pipeline() items a run's status keeps (docs/SCRIPTS.md). */
const SCRIPT_ERRORS_KEPT = 20;
/** A 40-character prompt costs 10 input tokens and the fake's answer 15 output tokens. */
const CALL_TOKENS = 25;

// ---------------------------------------------------------------------------------------------
// The grammar

/** A line a script writes to its standard output, pretending to be a frame or not. */
type Forged =
  | { kind: "guessed_nonce"; nonce: JsonValue | undefined; method: string; id: number | null }
  | { kind: "not_json_rpc"; text: string }
  | { kind: "oversize"; extra: number };

/** What a script does before its ending: each step adds one number to the result. */
type Step =
  | { kind: "fan_out"; n: number; via: "parallel" | "all" | "sequential" }
  | { kind: "nest"; depth: number; width: number; via: "parallel" | "pipeline" }
  | { kind: "recurse"; depth: number; async: boolean }
  | {
    kind: "throwing";
    n: number;
    via: "parallel" | "pipeline";
    what: "error" | "string" | "reject";
  }
  | { kind: "flood"; n: number; size: number; via: "log" | "console" | "stderr" | "stdout" }
  | { kind: "forge"; lines: Forged[] };

/** How a script ends. */
type Ending =
  | { kind: "return" }
  | { kind: "throw"; what: "error" | "string" }
  | { kind: "overflow" }
  | { kind: "spin"; how: "sync" | "microtasks" | "timers" | "never"; timeout: 1 | 2 }
  | { kind: "refused_loop"; catching: boolean }
  | { kind: "exit"; code: number }
  | { kind: "heap" }
  | { kind: "big_return" }
  | { kind: "journal"; size: number }
  | { kind: "budget"; n: number; cap: number; estimate: boolean };

/** One generated hostile run: its steps, its ending and the limits it is started with. */
interface HostileRun {
  steps: Step[];
  ending: Ending;
  maxAgents: number;
  concurrency: number;
}

/** Methods a forged frame may name: the real ones and a few that do not exist. */
const METHODS = ["done", "agent", "workflow", "log", "phase", "item_error", "replayed", "init"];

/** Text that is never a JSON-RPC 2.0 frame (and never blank): `#` cannot start JSON. */
const strayText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.constantFrom("\u001b[2J\u001b[H", "\u202eevil", "\u0000\u0007", '{"jsonrpc":"2.0"'),
).map((text) => `#${text.replace(/[\n\r]/g, " ")}`);

const forged: fc.Arbitrary<Forged> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("guessed_nonce" as const),
      nonce: fc.oneof(
        fc.constant("0".repeat(64)),
        fc.stringMatching(/^[0-9a-f]{64}$/),
        fc.stringMatching(/^[0-9a-f]{1,80}$/),
        fc.constantFrom<JsonValue | undefined>(undefined, null, 0, [], { nonce: "x" }, ""),
      ),
      method: fc.constantFrom(...METHODS),
      id: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.oneof(
      strayText,
      fc.constantFrom(
        `{"jsonrpc":"1.0","method":"done","params":{"ok":true,"value":"forged"}}`,
        `{"method":"done","params":{"ok":true,"value":"forged"}}`,
        `[{"jsonrpc":"2.0","method":"done"}]`,
        `"a string"`,
        `42`,
        `null`,
      ),
    ).map((text) => ({ kind: "not_json_rpc" as const, text })),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 5000 }).map((extra) => ({
      kind: "oversize" as const,
      extra,
    })),
  },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("fan_out" as const),
    n: fc.integer({ min: 1, max: 60 }),
    via: fc.constantFrom("parallel" as const, "all" as const, "sequential" as const),
  }),
  fc.oneof(
    // Wide and shallow, or one branch deep past the 32 nested fan-outs positions record.
    fc.record({
      kind: fc.constant("nest" as const),
      width: fc.integer({ min: 2, max: 3 }),
      depth: fc.integer({ min: 1, max: 3 }),
      via: fc.constantFrom("parallel" as const, "pipeline" as const),
    }),
    fc.record({
      kind: fc.constant("nest" as const),
      width: fc.constant(1),
      depth: fc.integer({ min: 1, max: 60 }),
      via: fc.constantFrom("parallel" as const, "pipeline" as const),
    }),
  ),
  fc.record({
    kind: fc.constant("recurse" as const),
    depth: fc.integer({ min: 1, max: 3000 }),
    async: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("throwing" as const),
    n: fc.integer({ min: 1, max: 300 }),
    via: fc.constantFrom("parallel" as const, "pipeline" as const),
    what: fc.constantFrom("error" as const, "string" as const, "reject" as const),
  }),
  fc.record({
    kind: fc.constant("flood" as const),
    n: fc.integer({ min: 1, max: 1500 }),
    size: fc.integer({ min: 1, max: 3000 }),
    via: fc.constantFrom("log" as const, "console" as const, "stderr" as const, "stdout" as const),
  }).map((flood) => ({ ...flood, n: Math.min(flood.n, Math.ceil(1_500_000 / flood.size)) })),
  fc.record({
    kind: fc.constant("forge" as const),
    lines: fc.array(forged, { minLength: 1, maxLength: 40 }),
  }),
);

/** Steps that make no agent() call, for the budget's runs (whose calls the ending counts). */
function agentFree(s: Step): boolean {
  return s.kind !== "fan_out" && s.kind !== "nest";
}

const ending: fc.Arbitrary<Ending> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "return" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("throw" as const),
      what: fc.constantFrom("error" as const, "string" as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "overflow" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("spin" as const),
      how: fc.constantFrom(
        "sync" as const,
        "microtasks" as const,
        "timers" as const,
        "never" as const,
      ),
      timeout: fc.constantFrom(1 as const, 2 as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("refused_loop" as const), catching: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("exit" as const),
      code: fc.integer({ min: 0, max: 9 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "heap" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "big_return" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("journal" as const),
      size: fc.integer({ min: 20_000, max: 70_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("budget" as const),
      n: fc.integer({ min: 1, max: 40 }),
      cap: fc.integer({ min: CALL_TOKENS, max: 1500 }),
      estimate: fc.boolean(),
    }),
  },
);

const hostileRun: fc.Arbitrary<HostileRun> = fc.record({
  steps: fc.array(step, { maxLength: 4 }),
  ending,
  maxAgents: fc.integer({ min: 1, max: 80 }),
  concurrency: fc.integer({ min: 1, max: 8 }),
}).map((run) => {
  // Enough agents for every call: these endings are about the budget and the journal.
  if (run.ending.kind === "budget") {
    return { ...run, steps: run.steps.filter(agentFree), maxAgents: 1000 };
  }
  if (run.ending.kind === "journal") return { ...run, maxAgents: 1000 };
  return run;
});

// ---------------------------------------------------------------------------------------------
// Scripts

/** How many calls the journal ending makes: enough results to pass both ledger limits. */
function journalCalls(size: number): number {
  return Math.ceil((Math.max(LIMITS.maxJournalBytes, LIMITS.maxBlobBytes) + 40_000) / size) + 2;
}

function renderForged(line: Forged): string {
  switch (line.kind) {
    case "guessed_nonce": {
      const frame: Record<string, JsonValue> = { jsonrpc: "2.0" };
      if (line.nonce !== undefined) frame.nonce = line.nonce;
      if (line.id !== null) frame.id = line.id;
      frame.method = line.method;
      frame.params = line.method === "agent"
        ? { prompt: "forged call", options: {} }
        : { ok: true, value: "forged", nonce: "0".repeat(64) };
      return `w(${JSON.stringify(JSON.stringify(frame))});`;
    }
    case "not_json_rpc":
      return `w(${JSON.stringify(line.text)});`;
    case "oversize":
      return `w("x".repeat(${LIMITS.frameLimit + line.extra}));`;
  }
}

function renderStep(s: Step): string {
  switch (s.kind) {
    case "fan_out":
      if (s.via === "parallel") {
        return `out.push(nn(await parallel(Array.from({ length: ${s.n} }, (_, i) => () => agent(T + "f" + i)))));`;
      }
      if (s.via === "all") {
        return `out.push(nn(await Promise.all(Array.from({ length: ${s.n} }, (_, i) => agent(T + "a" + i)))));`;
      }
      return `{ let k = 0; for (let i = 0; i < ${s.n}; i++) if (await agent(T + "s" + i) !== null) k++; out.push(k); }`;
    case "nest":
      if (s.via === "parallel") {
        return `{ const got = [];
          const nest = (d) => d === 0
            ? agent(T + "n").then((x) => { got.push(x); return x; })
            : parallel(Array.from({ length: ${s.width} }, () => () => nest(d - 1)));
          await nest(${s.depth}); out.push(nn(got)); }`;
      }
      return `{ const got = [];
        const stage = (s) => async (previous, item) => { const x = await agent(T + "p" + s + "." + item); got.push(x); return x; };
        await pipeline(Array.from({ length: ${s.width} }, (_, i) => i), ...Array.from({ length: ${s.depth} }, (_, s) => stage(s)));
        out.push(nn(got)); }`;
    case "recurse":
      return s.async
        ? `{ const g = async (k) => k === 0 ? 0 : 1 + await g(k - 1); out.push(await g(${s.depth})); }`
        : `{ const f = (k) => k === 0 ? 0 : 1 + f(k - 1); out.push(f(${s.depth})); }`;
    case "throwing": {
      const thrower = s.what === "error"
        ? `() => { throw new Error(T + "thrown"); }`
        : s.what === "string"
        ? `() => { throw T + "thrown"; }`
        : `() => Promise.reject(new RangeError(T + "rejected"))`;
      const items = `Array.from({ length: ${s.n} }, (_, i) => i)`;
      return s.via === "parallel"
        ? `out.push((await parallel(${items}.map(() => ${thrower}))).filter((x) => x === null).length);`
        : `out.push((await pipeline(${items}, ${thrower})).filter((x) => x === null).length);`;
    }
    case "flood": {
      const text = `T + "${s.via[0]}".repeat(${s.size})`;
      const emit = s.via === "log"
        ? `log(${text})`
        : s.via === "console"
        ? `console.log(${text})`
        : s.via === "stderr"
        ? `Deno.stderr.writeSync(new TextEncoder().encode(${text} + "\\n"))`
        : `w(${text})`;
      return `for (let i = 0; i < ${s.n}; i++) ${emit}; out.push(${s.n});`;
    }
    case "forge":
      return `${s.lines.map(renderForged).join("\n")}\nout.push(${s.lines.length});`;
  }
}

function renderEnding(e: Ending): string {
  switch (e.kind) {
    case "return":
      return `return { tag: T, out };`;
    case "throw":
      return e.what === "error"
        ? `throw new Error(T + "hostile end");`
        : `throw T + "hostile end";`;
    case "overflow":
      return `const deep = (k) => deep(k + 1) + 1; return deep(0);`;
    case "spin":
      return {
        sync: `while (true) {}`,
        microtasks: `for (;;) await null;`,
        timers: `for (;;) await new Promise((r) => setTimeout(r, 1));`,
        never: `await new Promise(() => {});`,
      }[e.how];
    case "refused_loop":
      return e.catching
        ? `while (true) { try { await agent(T + "again"); } catch {} }`
        : `while (true) await agent(T + "again");`;
    case "exit":
      return `Deno.exit(${e.code});`;
    case "heap":
      return `const hoard = []; while (true) hoard.push(new Array(100000).fill(1.5));`;
    case "big_return":
      return `return "r".repeat(${LIMITS.frameLimit * 2});`;
    case "journal":
      return `{ let k = 0;
        for (let i = 0; i < ${
        journalCalls(e.size)
      }; i++) if (await agent(T + i + "J".repeat(${e.size})) !== null) k++;
        return { tag: T, out, big: k }; }`;
    case "budget":
      return `const r = await parallel(Array.from({ length: ${e.n} }, (_, i) => () =>
          agent((T + "b" + i).padEnd(40, "p")${
        e.estimate ? `, { estimate: ${CALL_TOKENS} }` : ""
      })));
        return { tag: T, out, answered: nn(r), spent: budget.spent() };`;
  }
}

/** The script of run `index`: its tag prefixes every prompt, so the dispatcher can count per run. */
function renderScript(run: HostileRun, index: number): string {
  return [
    `const T = "r${index}:";`,
    `const out = [];`,
    `const nn = (xs) => xs.filter((x) => x !== null).length;`,
    // Whole lines, however much a pipe takes at once.
    `const w = (s) => { const b = new TextEncoder().encode(s + "\\n"); let o = 0; while (o < b.length) o += Deno.stdout.writeSync(b.subarray(o)); };`,
    ...run.steps.map(renderStep),
    renderEnding(run.ending),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// What each run must come to

/** The end a run's behaviour calls for. */
interface Expected {
  /** Acceptable (state, error code) pairs; more than one only where timing decides. */
  ends: Array<{ state: string; code?: string; message?: RegExp }>;
  /** The exact result of a run that succeeds (null: checked by `check`). */
  result?: JsonValue;
  /** The exact number of dispatched calls, when the run cannot stop early. */
  dispatched?: number;
  /** Most calls dispatched: always at most max_agents. */
  maxDispatched: number;
  /** Security events the script's lines must cause, by kind, and whether all surely arrived. */
  security: Record<string, number>;
  securityExact: boolean;
  /** Least narration entries (kept + dropped) the script's logs and output must cause. */
  minNarration: number;
  /** Thrown parallel()/pipeline() items before the ending. */
  thrown: number;
  /** Further checks of the final status, for endings whose figures are bounds. */
  check?: (status: RunStatus) => void;
}

function count(record: Record<string, number>, key: string, n = 1): void {
  record[key] = (record[key] ?? 0) + n;
}

/** Calls a step makes. */
function callsOf(s: Step): number {
  if (s.kind === "fan_out") return s.n;
  if (s.kind === "nest") return s.via === "parallel" ? s.width ** s.depth : s.width * s.depth;
  return 0;
}

/** Computes what a run must come to from its behaviour and the host's limits. */
function expect(run: HostileRun): Expected {
  const M = run.maxAgents;
  let used = 0;
  let refused = 0;
  let dispatched = 0;
  let thrown = 0;
  let minNarration = 0;
  const security: Record<string, number> = {};
  const out: number[] = [];
  let stoppedEarly = false;
  for (const s of run.steps) {
    const calls = callsOf(s);
    if (calls > 0) {
      const ok = Math.min(calls, Math.max(0, M - used));
      used += calls;
      refused += calls - ok;
      dispatched += ok;
      if (refused > LIMITS.maxRefusedCalls) {
        stoppedEarly = true;
        break;
      }
      out.push(ok);
      continue;
    }
    switch (s.kind) {
      case "recurse":
        out.push(s.depth);
        break;
      case "throwing":
        thrown += s.n;
        minNarration += s.n;
        out.push(s.n);
        break;
      case "flood":
        minNarration += s.n;
        if (s.via === "stdout") count(security, "non_frame_line", s.n);
        out.push(s.n);
        break;
      case "forge":
        for (const line of s.lines) {
          if (line.kind === "guessed_nonce") count(security, "bad_nonce");
          else if (line.kind === "oversize") count(security, "oversize_frame");
          else {
            count(security, "non_frame_line");
            minNarration++;
          }
        }
        out.push(s.lines.length);
        break;
    }
  }
  const base = { maxDispatched: M, security, thrown, minNarration };
  const refusedStop = {
    state: "failed",
    code: "agent_limit_exceeded",
    message: new RegExp(
      `^AgentLimitExceeded: the script kept calling agent\\(\\) after its calls were refused: ${
        LIMITS.maxRefusedCalls + 1
      } refused calls, over the limit of ${LIMITS.maxRefusedCalls} a run \\(the last: `,
    ),
  };
  const e = run.ending;
  if (stoppedEarly) {
    // A loop ending's short timeout may come first on a loaded machine.
    const ends = e.kind === "spin"
      ? [refusedStop, { state: "timeout", code: "timeout" }]
      : [refusedStop];
    return { ...base, ends, securityExact: false, minNarration: 0, thrown: 0 };
  }
  switch (e.kind) {
    case "return":
      return {
        ...base,
        ends: [{ state: "succeeded" }],
        result: { tag: "", out },
        dispatched,
        securityExact: true,
      };
    case "throw":
      return {
        ...base,
        ends: [{
          state: "failed",
          code: "script_error",
          message: e.what === "error"
            ? /^Error: r\d+:hostile end \(script\.js:\d+:\d+\)$/
            : /^uncaught exception: r\d+:hostile end$/,
        }],
        dispatched,
        securityExact: true,
      };
    case "overflow":
      return {
        ...base,
        ends: [{
          state: "failed",
          code: "script_error",
          message: /^RangeError: Maximum call stack size exceeded/,
        }],
        dispatched,
        securityExact: true,
      };
    case "big_return":
      return {
        ...base,
        ends: [{
          state: "failed",
          code: "script_error",
          message: new RegExp(
            `^RangeError: the message is \\d+ bytes, over the bridge limit of ${LIMITS.frameLimit} bytes`,
          ),
        }],
        dispatched,
        securityExact: true,
      };
    case "spin":
      return {
        ...base,
        ends: [{
          state: "timeout",
          code: "timeout",
          message: new RegExp(`^the run exceeded its timeout of ${e.timeout} s$`),
        }],
        securityExact: false,
      };
    case "refused_loop":
      // The loop takes every agent left, then is stopped by its refusals.
      return { ...base, ends: [refusedStop], dispatched: M, securityExact: true };
    case "exit":
      return {
        ...base,
        ends: [{
          state: "failed",
          code: "guest_crashed",
          message: new RegExp(
            `^the script's process exited with code ${e.code} before the script finished`,
          ),
        }],
        dispatched,
        securityExact: false,
      };
    case "heap":
      return {
        ...base,
        ends: [{
          state: "failed",
          code: "out_of_memory",
          message: new RegExp(
            `^the script ran out of memory: it reached the guest's heap limit of ${LIMITS.heapMb} MiB$`,
          ),
        }],
        dispatched,
        securityExact: false,
      };
    case "journal": {
      const n = journalCalls(e.size);
      return {
        ...base,
        ends: [{ state: "succeeded" }],
        dispatched: dispatched + n,
        securityExact: true,
        check(status) {
          const result = status.result as { out: number[]; big: number };
          assert.deepEqual(result.out, out);
          assert.ok(result.big >= 1 && result.big < n, `${result.big} of ${n} big results kept`);
          const ledger = status.conditions.filter((c) => c.type === "LedgerLimitExceeded");
          assert.equal(ledger.length, 1, "one LedgerLimitExceeded condition");
          assert.match(
            ledger[0]!.message,
            /the run's (journal reached its limit of 262144 bytes|result files reached their limit of 262144 bytes)/,
          );
          assert.equal(status.failures.ledger_limit, n - result.big);
        },
      };
    }
    case "budget": {
      const refusedByBudget = (answered: number) => e.n - answered;
      const exact = e.estimate ? Math.min(e.n, Math.floor(e.cap / CALL_TOKENS)) : undefined;
      if (exact !== undefined && refusedByBudget(exact) > LIMITS.maxRefusedCalls) {
        return { ...base, ends: [refusedStop], dispatched: exact, securityExact: true };
      }
      return {
        ...base,
        ends: [{ state: "succeeded" }],
        ...(exact !== undefined ? { dispatched: exact } : {}),
        securityExact: true,
        check(status) {
          const result = status.result as { out: number[]; answered: number; spent: number };
          assert.deepEqual(result.out, out);
          assert.equal(result.spent, result.answered * CALL_TOKENS);
          if (exact !== undefined) {
            // An estimate no smaller than the largest call: the cap is never passed.
            assert.equal(result.answered, exact);
            assert.ok(result.spent <= e.cap);
          } else {
            // The documented overshoot: at most the run's concurrency times the largest call.
            assert.ok(result.answered >= 1);
            assert.ok(
              result.spent <= e.cap + run.concurrency * CALL_TOKENS,
              `spent ${result.spent} of ${e.cap} at concurrency ${run.concurrency}`,
            );
            if (e.cap >= e.n * CALL_TOKENS) assert.equal(result.answered, e.n);
          }
          const exceeded = status.conditions.filter((c) => c.type === "BudgetExceeded");
          assert.equal(exceeded.length, result.answered < e.n ? 1 : 0);
          assert.equal(status.budget.spent, result.spent);
        },
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The host

/** A dispatcher over the fake provider that counts the calls it dispatches, by run tag. */
function taggedDispatcher(): Dispatcher & { counts: Map<string, number> } {
  const inner = createDispatcher({ fakeLatencyMs: 2 });
  const counts = new Map<string, number>();
  return {
    providers: () => inner.providers(),
    status: () => inner.status(),
    admit: (options, context) => inner.admit(options, context),
    dispatch(input, context) {
      const tag = /^[rb]\d+:/.exec(input.prompt)?.[0] ?? "?";
      counts.set(tag, (counts.get(tag) ?? 0) + 1);
      return inner.dispatch(input, context);
    },
    counts,
  };
}

/** Benign runs beside the hostile ones, with their exact results. */
const BENIGN: Array<{ script: string; result: (tag: string) => JsonValue }> = [
  {
    script: `const a = await agent(T + "one"); const b = await agent(T + "two"); return [a, b];`,
    result: (tag) => [`fake response to: ${tag}one`, `fake response to: ${tag}two`],
  },
  {
    script: `return await parallel([0, 1, 2, 3, 4].map((i) => () => agent(T + i)));`,
    result: (tag) => [0, 1, 2, 3, 4].map((i) => `fake response to: ${tag}${i}`),
  },
  {
    script:
      `return await pipeline(["x", "y"], (item) => agent(T + item), (prev, item) => prev.length + item);`,
    result: (
      tag,
    ) => [`${`fake response to: ${tag}x`.length}x`, `${`fake response to: ${tag}y`.length}y`],
  },
  {
    script:
      `log("steady"); const r = await agent(T + "schema", { schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } }); return r;`,
    result: () => ({ n: 0 }),
  },
];

function mib(bytes: number): number {
  return Math.round(bytes / 1024 / 1024);
}

Deno.test("hostile scripts run together each end as their behaviour calls for, within their limits, and benign runs beside them finish", async () => {
  const runs = fc.sample(
    fc.array(hostileRun, {
      minLength: Math.ceil(RUNS * SCALE),
      maxLength: Math.ceil(RUNS * SCALE),
    }),
    { seed: SEED, numRuns: 1 },
  )[0]!;
  const dispatcher = taggedDispatcher();
  await using t = await testManager({ dispatcher, ...LIMITS });

  // A first run warms the host up (modules, the KV store), so growth is measured from there.
  await t.manager.wait((await t.manager.start({ script: `return 1;` }, LOCAL)).run_id, LOCAL);
  const before = Deno.memoryUsage();
  let peakRss = before.rss;
  let peakHeap = before.heapUsed;
  const sampler = setInterval(() => {
    const now = Deno.memoryUsage();
    peakRss = Math.max(peakRss, now.rss);
    peakHeap = Math.max(peakHeap, now.heapUsed);
  }, 50);

  const started = performance.now();
  const scripts = runs.map(renderScript);
  const hostile = await Promise.all(runs.map((run, index) =>
    t.manager.start({
      script: scripts[index],
      max_agents: run.maxAgents,
      concurrency: run.concurrency,
      timeout: run.ending.kind === "spin" ? run.ending.timeout : 60,
      ...(run.ending.kind === "budget" ? { budget_tokens: run.ending.cap } : {}),
    }, LOCAL)
  ));
  const benign = await Promise.all(
    BENIGN.map((b, index) =>
      t.manager.start({ script: `const T = "b${index}:";\n${b.script}`, timeout: 60 }, LOCAL)
    ),
  );
  const hostileEnds = await Promise.all(hostile.map((r) => t.manager.wait(r.run_id, LOCAL)));
  const benignEnds = await Promise.all(benign.map((r) => t.manager.wait(r.run_id, LOCAL)));
  const elapsed = performance.now() - started;
  clearInterval(sampler);
  const after = Deno.memoryUsage();

  const states: Record<string, number> = {};
  for (const [index, status] of hostileEnds.entries()) {
    const run = runs[index]!;
    const tag = `r${index}:`;
    try {
      const expected = expect(run);
      count(states, `${status.state}${status.error ? ` (${status.error.code})` : ""}`);
      const end = expected.ends.find((e) =>
        e.state === status.state && e.code === status.error?.code
      );
      assert.ok(
        end,
        `ended ${status.state} ${JSON.stringify(status.error)}; expected ${
          expected.ends.map((e) => `${e.state} ${e.code ?? ""}`).join(" or ")
        }`,
      );
      if (end.message) assert.match(status.error!.message, end.message);
      if (expected.result !== undefined) {
        assert.deepEqual(status.result, { ...(expected.result as object), tag });
      }
      expected.check?.(status);
      // Calls: never more dispatched than max_agents, and exactly what the behaviour makes.
      const dispatched = dispatcher.counts.get(tag) ?? 0;
      assert.ok(
        dispatched <= run.maxAgents,
        `${dispatched} dispatched, max_agents ${run.maxAgents}`,
      );
      assert.ok(dispatched <= expected.maxDispatched);
      if (expected.dispatched !== undefined) assert.equal(dispatched, expected.dispatched);
      assert.ok(status.journal.live <= run.maxAgents);
      assert.equal(status.calls.running + status.calls.queued, 0, "no call is left running");
      // Forged and stray lines: each one recorded (or counted), none of them obeyed.
      const kinds: Record<string, number> = {};
      for (const event of status.security_events) count(kinds, event.kind);
      const recorded = status.security_events.length + status.security_events_dropped;
      assert.ok(status.security_events.length <= LIMITS.maxSecurityEvents);
      const forgedTotal = Object.values(expected.security).reduce((a, b) => a + b, 0);
      if (expected.securityExact) {
        assert.equal(recorded, forgedTotal, `security events ${JSON.stringify(kinds)}`);
        if (forgedTotal <= LIMITS.maxSecurityEvents) assert.deepEqual(kinds, expected.security);
      } else assert.ok(recorded <= forgedTotal);
      for (const kind of Object.keys(kinds)) assert.ok(kind in expected.security, kind);
      // Narration and thrown items: bounded in count and bytes, the rest counted.
      assert.ok(status.narration.length <= LIMITS.maxNarration);
      const narrationBytes = status.narration.reduce(
        (sum, entry) => sum + new TextEncoder().encode(entry.text).length,
        0,
      );
      assert.ok(narrationBytes <= LIMITS.maxNarrationBytes, `${narrationBytes} bytes of narration`);
      if (expected.securityExact) {
        assert.ok(status.narration.length + status.narration_dropped >= expected.minNarration);
        assert.equal(status.script_errors.length, Math.min(expected.thrown, SCRIPT_ERRORS_KEPT));
        assert.equal(status.script_errors.length + status.script_errors_dropped, expected.thrown);
      }
      assert.ok(status.script_errors.length <= SCRIPT_ERRORS_KEPT);
      // The ledger: the journal within its limit (plus one entry's slack), results likewise.
      const journal = await t.manager.journal(status.run_id, LOCAL);
      const journalBytes = new TextEncoder().encode(JSON.stringify(journal)).length;
      assert.ok(
        journalBytes <= LIMITS.maxJournalBytes + 64 * 1024,
        `journal of ${journalBytes} bytes`,
      );
      let blobBytes = 0;
      try {
        for await (const blob of Deno.readDir(`${t.home}/runs/${status.run_id}/blobs`)) {
          blobBytes += (await Deno.stat(`${t.home}/runs/${status.run_id}/blobs/${blob.name}`)).size;
        }
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
      assert.ok(blobBytes <= LIMITS.maxBlobBytes, `${blobBytes} bytes of result files`);
    } catch (error) {
      throw new Error(
        `hostile run ${index} (SVC_FUZZ_SEED=${SEED}) broke a promise: ${
          (error as Error).message
        }\n` +
          `behaviour: ${JSON.stringify(run)}\nscript:\n${scripts[index]!.slice(0, 4000)}`,
        { cause: error },
      );
    }
  }
  for (const [index, status] of benignEnds.entries()) {
    assert.equal(status.state, "succeeded", `benign run ${index}: ${JSON.stringify(status.error)}`);
    assert.deepEqual(status.result, BENIGN[index]!.result(`b${index}:`));
  }

  // Memory: a safety bound, not a speed figure. What the host keeps of a run is bounded by the
  // limits above (narration 64 KiB, journal 256 KiB, result files on disk, 30 security events,
  // one frame of 128 KiB at a time per guest), about 1 MiB a run; with 28 runs, the ledger's
  // caches and V8's own slack, growth of a few hundred MiB would mean something is kept
  // unbounded (a flood of 1.5 MB per step and guest, or an oversize line buffered whole).
  const growth = peakRss - before.rss;
  assert.ok(growth < 400 * 1024 * 1024, `the host's memory grew by ${mib(growth)} MiB`);

  // No guest is left behind: no process mentions this host's data directory, and the guests'
  // scratch directories are gone.
  await t.manager.close();
  assert.deepEqual(await processesMentioning(t.home), [], "guest processes left behind");
  assert.deepEqual([...Deno.readDirSync(`${t.home}/tmp`)].map((e) => e.name), [], "scratch left");

  const behaviours: Record<string, number> = {};
  for (const run of runs) {
    for (const s of run.steps) count(behaviours, `${s.kind}/${"via" in s ? s.via : s.kind}`);
    count(behaviours, `end:${run.ending.kind}`);
  }
  console.log(
    `hostile scripts: ${runs.length} generated (seed ${SEED}) + ${BENIGN.length} benign, ` +
      `${Math.round(elapsed)} ms; ends ${JSON.stringify(states)}; rss ${mib(before.rss)} MiB ` +
      `before, ${mib(peakRss)} peak, ${mib(after.rss)} after; heap ${mib(before.heapUsed)} MiB ` +
      `before, ${mib(peakHeap)} peak, ${mib(after.heapUsed)} after; behaviours ${
        JSON.stringify(behaviours)
      }`,
  );
});
