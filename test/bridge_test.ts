import assert from "node:assert/strict";
import { classifyLine, timingSafeEqual } from "../src/engine/frames.ts";
import { parseItemError } from "../src/engine/guest_session.ts";
import { readLines } from "../src/streams/mod.ts";
import { Semaphore } from "../src/engine/mod.ts";

function streamOf(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return ReadableStream.from(chunks.map((c) => encoder.encode(c)));
}

async function collect(stream: ReadableStream<Uint8Array>, max: number) {
  const out = [];
  for await (const line of readLines(stream, max)) out.push(line);
  return out;
}

Deno.test("readLines() joins lines split across chunks and keeps a final unterminated line", async () => {
  assert.deepEqual(await collect(streamOf("ab", "c\nde", "f\n\ng"), 100), [
    { kind: "line", text: "abc" },
    { kind: "line", text: "def" },
    { kind: "line", text: "" },
    { kind: "line", text: "g" },
  ]);
});

Deno.test("readLines() drops a line over the limit without buffering it, and goes on", async () => {
  assert.deepEqual(
    await collect(streamOf("ok\n", "x".repeat(30), "y".repeat(30), "\nnext\n", "z".repeat(70)), 50),
    [
      { kind: "line", text: "ok" },
      { kind: "oversize", bytes: 60 },
      { kind: "line", text: "next" },
      { kind: "oversize", bytes: 70 },
    ],
  );
});

Deno.test("readLines() decodes multi-byte characters split between chunks", async () => {
  const bytes = new TextEncoder().encode("héllo\n");
  const stream = ReadableStream.from([bytes.slice(0, 2), bytes.slice(2)]);
  assert.deepEqual(await collect(stream, 100), [{ kind: "line", text: "héllo" }]);
});

Deno.test("classifyLine() accepts only frames with the nonce and a known method", () => {
  const nonce = "n".repeat(64);
  const frame = (extra: Record<string, unknown>) =>
    JSON.stringify({ jsonrpc: "2.0", nonce, ...extra });
  assert.deepEqual(
    classifyLine(frame({ id: 1, method: "agent", params: { prompt: "p" } }), nonce),
    {
      type: "message",
      message: { kind: "request", id: 1, method: "agent", params: { prompt: "p" } },
    },
  );
  assert.deepEqual(classifyLine(frame({ method: "log", params: {} }), nonce).type, "message");
  assert.deepEqual(classifyLine("", nonce), { type: "empty" });
  const dropped = (line: string) => {
    const c = classifyLine(line, nonce);
    return c.type === "dropped" ? c.kind : c.type;
  };
  assert.equal(dropped("hello"), "non_frame_line");
  assert.equal(dropped("[1,2]"), "non_frame_line");
  assert.equal(dropped(JSON.stringify({ a: 1 })), "non_frame_line");
  assert.equal(
    dropped(JSON.stringify({ jsonrpc: "2.0", nonce: "x".repeat(64), method: "log" })),
    "bad_nonce",
  );
  assert.equal(dropped(JSON.stringify({ jsonrpc: "2.0", method: "log" })), "bad_nonce");
  assert.equal(dropped(frame({ id: 1, method: "spawn" })), "malformed_frame");
  assert.equal(dropped(frame({ id: "1", method: "agent" })), "malformed_frame");
  assert.equal(dropped(frame({ method: "exec" })), "malformed_frame");
  assert.equal(dropped(frame({})), "malformed_frame");
});

Deno.test("an item_error report is a message only with every field of the right type and range", () => {
  const nonce = "n".repeat(64);
  const line = JSON.stringify({ jsonrpc: "2.0", nonce, method: "item_error", params: {} });
  assert.equal(classifyLine(line, nonce).type, "message");
  const good = {
    fn: "pipeline",
    index: 3,
    stage: 1,
    label: null,
    name: "Error",
    message: "m",
    stack: "",
  };
  assert.deepEqual(parseItemError(good, 4096), {
    fn: "pipeline",
    index: 3,
    stage: 1,
    label: null,
    error: { name: "Error", message: "m", stack: "" },
  });
  const bad = [
    null,
    [good],
    { ...good, fn: "agent" },
    { ...good, index: -1 },
    { ...good, index: 4096 },
    { ...good, index: 1.5 },
    { ...good, index: "3" },
    { ...good, stage: null },
    { ...good, stage: -1 },
    { ...good, fn: "parallel" },
    { ...good, label: 7 },
    { ...good, name: undefined },
    { ...good, message: { toString: "x" } },
    { ...good, stack: null },
  ];
  for (const params of bad) {
    assert.equal(parseItemError(params, 4096), undefined, JSON.stringify(params));
  }
  assert.notEqual(parseItemError({ ...good, fn: "parallel", stage: null }, 4096), undefined);
});

Deno.test("timingSafeEqual() compares whole strings", () => {
  assert.equal(timingSafeEqual("abc", "abc"), true);
  assert.equal(timingSafeEqual("abc", "abd"), false);
  assert.equal(timingSafeEqual("abc", "ab"), false);
});

Deno.test("Semaphore queues beyond its permits in FIFO order and abandons aborted waits", async () => {
  const semaphore = new Semaphore(2);
  const a = await semaphore.acquire();
  await semaphore.acquire();
  const order: string[] = [];
  const third = semaphore.acquire().then((release) => (order.push("third"), release));
  const aborted = new AbortController();
  const fourth = semaphore.acquire(aborted.signal);
  const fifth = semaphore.acquire().then((release) => (order.push("fifth"), release));
  assert.equal(semaphore.waiting, 3);
  aborted.abort(new Error("gave up"));
  await assert.rejects(fourth, /gave up/);
  a();
  a();
  (await third)();
  await fifth;
  assert.deepEqual(order, ["third", "fifth"]);
  assert.throws(() => new Semaphore(0), /permits must be a positive integer/);
});
