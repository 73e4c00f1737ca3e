/** The host's frames to a guest: those of one turn share one write, in order. */
import assert from "node:assert/strict";
import { frameSender } from "../src/engine/frame_sender.ts";

function recordingWriter(): { writer: WritableStreamDefaultWriter<Uint8Array>; writes: string[] } {
  const writes: string[] = [];
  const decoder = new TextDecoder();
  const stream = new WritableStream<Uint8Array>({
    write(chunk) {
      writes.push(decoder.decode(chunk));
    },
  });
  return { writer: stream.getWriter(), writes };
}

Deno.test("frames sent in one turn go to the pipe in one write, in order, one a line", async () => {
  const { writer, writes } = recordingWriter();
  const send = frameSender(writer);
  const sent = [send({ id: 1 }), send({ id: 2 }), send({ id: 3 })];
  await Promise.all(sent);
  assert.deepEqual(writes, ['{"id":1}\n{"id":2}\n{"id":3}\n']);
  await send({ id: 4 });
  assert.deepEqual(writes.slice(1), ['{"id":4}\n'], "a later turn's frame is a write of its own");
});

Deno.test("a frame sent while an earlier write is pending still follows it", async () => {
  const { writer, writes } = recordingWriter();
  const send = frameSender(writer);
  const first = send({ id: 1 });
  await Promise.resolve();
  const second = send({ id: 2 });
  await Promise.all([first, second]);
  assert.equal(writes.join(""), '{"id":1}\n{"id":2}\n');
});
