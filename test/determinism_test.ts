import assert from "node:assert/strict";
import { runScript } from "./helpers.ts";

/** Runs each expression in the guest and returns what it threw (or "ok: <value>"). */
async function attempts(expressions: string[]): Promise<string[]> {
  const status = await runScript(`
    const out = [];
    for (const source of ${JSON.stringify(expressions)}) {
      try { out.push("ok: " + String(Function(source)())); } catch (e) { out.push(e.message); }
    }
    return out;
  `);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  return status.result as string[];
}

const LOCKED = [
  ["return Date.now()", "Date.now()"],
  ["return new Date()", "new Date()"],
  ["return Date()", "Date()"],
  ["return Math.random()", "Math.random()"],
  ["return performance.now()", "performance.now()"],
  ["return crypto.getRandomValues(new Uint8Array(4))", "crypto.getRandomValues()"],
  ["return crypto.randomUUID()", "crypto.randomUUID()"],
] as const;

Deno.test("clock and randomness calls throw an error naming the call and pointing to args", async () => {
  const seen = await attempts(LOCKED.map(([source]) => source));
  LOCKED.forEach(([, call], i) => {
    assert.ok(seen[i]!.startsWith(`${call} is not available in workflow scripts`), seen[i]);
    assert.match(seen[i]!, /pass times and random values in through args/);
  });
});

Deno.test("new Date(x) and the Date statics that read no clock still work", async () => {
  const seen = await attempts([
    "return new Date(0).toISOString()",
    "return new Date('2026-01-02T03:04:05Z').getTime()",
    "return Date.UTC(2026, 0, 1)",
    "return Date.parse('2026-01-01T00:00:00Z')",
    "return new Date(0) instanceof Date",
  ]);
  assert.deepEqual(seen, [
    "ok: 1970-01-01T00:00:00.000Z",
    "ok: 1767323045000",
    "ok: 1767225600000",
    "ok: 1767225600000",
    "ok: true",
  ]);
});

Deno.test("the lock survives prototype walks, Function and eval, Reflect and subclassing", async () => {
  const seen = await attempts([
    "return new (new Date(0).constructor)()",
    "return Object.getPrototypeOf(new Date(0)).constructor.now()",
    "return Reflect.construct(Date, [])",
    "return Reflect.apply(Date.now, null, [])",
    "class Later extends Date { constructor() { super(); } } return new Later()",
    "return eval('Date.now()')",
    "return (0, eval)('Math.random()')",
    "return Function('return new Date()')()",
    "return Object.getPrototypeOf(performance).now.call(performance)",
    "return Object.getPrototypeOf(crypto).randomUUID.call(crypto)",
    "Math.random = () => 4; return Math.random()",
    "Date.now = () => 4; return Date.now()",
    "delete globalThis.Date; return Date.now()",
    "return Temporal.Now.instant()",
    "return process.hrtime()",
    "return new Worker('data:,')",
  ]);
  for (const [i, message] of seen.entries()) {
    assert.ok(!message.startsWith("ok:"), `attempt ${i} reached a real clock: ${message}`);
    assert.match(message, /is not available in workflow scripts/, `attempt ${i}: ${message}`);
  }
});

Deno.test("guests run with a fixed --seed, so a path around the lock stays reproducible", async () => {
  // A multipart body's boundary comes from the runtime's own Math.random, which the lock does
  // not reach; its seed comes from --seed.
  const script = `
    const form = new FormData();
    form.set("a", "b");
    return new Response(form).headers.get("content-type");
  `;
  const first = await runScript(script);
  const second = await runScript(script);
  assert.equal(first.state, "succeeded", JSON.stringify(first.error));
  assert.deepEqual(first.result, second.result);
});
