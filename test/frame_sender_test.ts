/** The host's frames to a guest: those of one turn share one write, in order, after the turn. */
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

Deno.test("frames sent in one turn go to the pipe in one write at its end, in order", async () => {
  const { writer, writes } = recordingWriter();
  const sender = frameSender(writer);
  try {
    const first = sender.send({ id: 1 });
    await Promise.resolve();
    const later = [sender.send({ id: 2 }), sender.send({ id: 3 })];
    await Promise.resolve();
    assert.deepEqual(writes, [], "nothing is written before the turn's own work is done");
    await Promise.all([first, ...later]);
    assert.deepEqual(writes, ['{"id":1}\n{"id":2}\n{"id":3}\n']);
    await sender.send({ id: 4 });
    assert.deepEqual(writes.slice(1), ['{"id":4}\n'], "a later turn's frame is a write of its own");
  } finally {
    sender.close();
  }
});

Deno.test("closing writes what is pending and drops what comes after", async () => {
  const { writer, writes } = recordingWriter();
  const sender = frameSender(writer);
  const pending = sender.send({ id: 1 });
  sender.close();
  await pending;
  await sender.send({ id: 2 });
  assert.deepEqual(writes, ['{"id":1}\n']);
});
