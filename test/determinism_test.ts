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

/** Runs `script` in two separate runs and returns both products. */
async function twice(script: string, args?: unknown): Promise<[unknown, unknown]> {
  const request = args === undefined ? {} : { args };
  const first = await runScript(script, request);
  const second = await runScript(script, request);
  assert.equal(first.state, "succeeded", JSON.stringify(first.error));
  assert.equal(second.state, "succeeded", JSON.stringify(second.error));
  return [first.result, second.result];
}

Deno.test("the process's ids and working directory read the same in every run", async () => {
  const [first, second] = await twice(
    `return [Deno.pid, Deno.ppid, process.pid, process.ppid, Deno.cwd(), process.cwd()];`,
  );
  assert.deepEqual(first, [1, 0, 1, 0, "/", "/"]);
  assert.deepEqual(second, first);
});

const MEASUREMENTS = [
  ["return process.cpuUsage()", "process.cpuUsage()"],
  ["return process.threadCpuUsage()", "process.threadCpuUsage()"],
  ["return process.resourceUsage()", "process.resourceUsage()"],
  ["return process.memoryUsage()", "process.memoryUsage()"],
  ["return process.memoryUsage.rss()", "process.memoryUsage.rss()"],
  ["return Deno.memoryUsage()", "Deno.memoryUsage()"],
  ["return Deno.cpuUsage()", "Deno.cpuUsage()"],
  ["return URL.createObjectURL(new Blob(['x']))", "URL.createObjectURL()"],
  ["return new PerformanceMark('m').startTime", "new PerformanceMark() without a startTime"],
  [
    "return new Intl.DateTimeFormat('en', { timeStyle: 'full' }).format()",
    "Intl.DateTimeFormat.prototype.format() without a date",
  ],
  [
    "const format = new Intl.DateTimeFormat('en').format; return format()",
    "Intl.DateTimeFormat.prototype.format() without a date",
  ],
  [
    "return new Intl.DateTimeFormat('en').formatToParts()",
    "Intl.DateTimeFormat.prototype.formatToParts() without a date",
  ],
] as const;

Deno.test("measurements of the process, blob URLs, marks and Intl's current time throw", async () => {
  const seen = await attempts(MEASUREMENTS.map(([source]) => source));
  MEASUREMENTS.forEach(([, call], i) => {
    assert.ok(seen[i]!.startsWith(`${call} is not available in workflow scripts`), seen[i]);
  });
});

Deno.test("what reads no clock keeps working: marks with a startTime, Intl with a date", async () => {
  const seen = await attempts([
    "return new PerformanceMark('m', { startTime: 5 }).startTime",
    "return new Intl.DateTimeFormat('en', { timeZone: 'UTC' }).format(new Date(0))",
    "return new Intl.DateTimeFormat('en', { timeZone: 'UTC' }).formatToParts(0).length",
    "const f = new Intl.DateTimeFormat('en'); return f.format === f.format",
  ]);
  assert.deepEqual(seen, ["ok: 5", "ok: 1/1/1970", "ok: 5", "ok: true"]);
});

Deno.test("Web Crypto's random paths throw, and its deterministic ones give the same bytes in every run", async () => {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSA-OAEP",
      modulusLength: 1024,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["encrypt", "decrypt"],
  );
  const { alg: _alg, key_ops: _ops, ...privateJwk } = await crypto.subtle.exportKey(
    "jwk",
    pair.privateKey,
  );
  const { alg: _alg2, key_ops: _ops2, ...publicJwk } = await crypto.subtle.exportKey(
    "jwk",
    pair.publicKey,
  );
  const script = `
    const { publicJwk, privateJwk } = args;
    const subtle = crypto.subtle;
    const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
    const data = new Uint8Array([1, 2, 3]);
    const out = {};
    const attempt = async (what, run) => {
      try { out[what] = "ok: " + await run(); } catch (e) { out[what] = e.message; }
    };
    const oaep = await subtle.importKey("jwk", publicJwk, { name: "RSA-OAEP", hash: "SHA-256" }, false, ["encrypt", "wrapKey"]);
    const pss = await subtle.importKey("jwk", privateJwk, { name: "RSA-PSS", hash: "SHA-256" }, false, ["sign"]);
    const pkcs = await subtle.importKey("jwk", privateJwk, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["sign"]);
    const hmac = await subtle.importKey("raw", data, { name: "HMAC", hash: "SHA-256" }, true, ["sign"]);
    await attempt("generateKey", () => subtle.generateKey({ name: "AES-GCM", length: 128 }, true, ["encrypt"]));
    await attempt("encrypt RSA-OAEP", async () => hex(await subtle.encrypt({ name: "RSA-OAEP" }, oaep, data)));
    await attempt("encrypt rsa-oaep", async () => hex(await subtle.encrypt("rsa-oaep", oaep, data)));
    await attempt("wrapKey RSA-OAEP", async () => hex(await subtle.wrapKey("raw", hmac, oaep, { name: "RSA-OAEP" })));
    await attempt("sign RSA-PSS", async () => hex(await subtle.sign({ name: "RSA-PSS", saltLength: 32 }, pss, data)));
    let reads = 0;
    const twoFaced = { get name() { return reads++ === 0 ? "RSASSA-PKCS1-v1_5" : "RSA-PSS"; }, saltLength: 32 };
    await attempt("sign two-faced", async () => hex(await subtle.sign(twoFaced, pss, data)));
    await attempt("sign RSASSA-PKCS1-v1_5", async () => hex(await subtle.sign("RSASSA-PKCS1-v1_5", pkcs, data)));
    await attempt("sign HMAC", async () => hex(await subtle.sign({ name: "HMAC" }, hmac, data)));
    await attempt("digest", async () => hex(await subtle.digest("SHA-256", data)));
    return out;
  `;
  const [first, second] = await twice(script, { publicJwk, privateJwk });
  const out = first as Record<string, string>;
  assert.match(
    out.generateKey!,
    /^crypto\.subtle\.generateKey\(\) is not available in workflow scripts/,
  );
  assert.match(
    out["encrypt RSA-OAEP"]!,
    /^crypto\.subtle\.encrypt\(\) with RSA-OAEP is not available/,
  );
  assert.match(
    out["encrypt rsa-oaep"]!,
    /^crypto\.subtle\.encrypt\(\) with RSA-OAEP is not available/,
  );
  assert.match(
    out["wrapKey RSA-OAEP"]!,
    /^crypto\.subtle\.wrapKey\(\) with RSA-OAEP is not available/,
  );
  assert.match(out["sign RSA-PSS"]!, /^crypto\.subtle\.sign\(\) with RSA-PSS is not available/);
  for (const what of ["sign RSASSA-PKCS1-v1_5", "sign HMAC", "digest"]) {
    assert.match(out[what]!, /^ok: [0-9a-f]+$/, `${what}: ${out[what]}`);
  }
  assert.ok(!out["sign two-faced"]!.startsWith("ok: "), out["sign two-faced"]);
  assert.deepEqual(second, first);
});
