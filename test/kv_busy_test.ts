import assert from "node:assert/strict";
import { platform } from "../src/platform/mod.ts";
import { denoCommand, fixture, ROOT, tempDir } from "./helpers.ts";

Deno.test("several processes committing to one KV file at once all succeed: a busy database is retried", async () => {
  await using dir = await tempDir("svc-kv-");
  const path = `${dir.path}/shared.kv`;
  const writers = Array.from({ length: 3 }, () =>
    denoCommand({
      args: [
        "run",
        "--config",
        `${ROOT}/deno.json`,
        "--allow-read",
        "--allow-write",
        "--allow-env",
        fixture("kv_writer.ts"),
        path,
        "60",
      ],
      cwd: ROOT,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn());
  const stderrs = writers.map((writer) => new Response(writer.stderr).text());
  const stdouts = writers.map((writer) =>
    writer.stdout.pipeThrough(new TextDecoderStream()).getReader()
  );
  // Every writer has opened the file before any writes.
  for (const reader of stdouts) {
    let text = "";
    while (!text.includes("ready")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  }
  await Promise.all(writers.map(async (writer) => {
    const stdin = writer.stdin.getWriter();
    await stdin.write(new TextEncoder().encode("go\n"));
    await stdin.close();
  }));
  for (const [i, writer] of writers.entries()) {
    while (!(await stdouts[i]!.read()).done) {
      // Drained, so the writer never blocks on a full pipe.
    }
    assert.equal((await writer.status).code, 0, await stderrs[i]);
  }
  const kv = await platform().openKv(path);
  try {
    let written = 0;
    for await (const _ of kv.list(["written"])) written++;
    assert.equal(written, 3 * 60);
  } finally {
    kv.close();
  }
});
