/**
 * Each harness parser's progress events from output the real tools wrote (recorded against the
 * stand-in model server under test/fixtures/progress/: Claude Code's stream-json, Codex's and
 * opencode's JSON events, Gemini's JSON document), through the channel that redacts and bounds.
 */
import assert from "node:assert/strict";
import { type ProgressChannel, progressChannel } from "../src/dispatch/mod.ts";
import { claudeProgress } from "../src/dispatch/harness/claude.ts";
import { codexProgress } from "../src/dispatch/harness/codex_progress.ts";
import { geminiProgress } from "../src/dispatch/harness/gemini.ts";
import { opencodeProgress } from "../src/dispatch/harness/opencode.ts";
import { type JsonRecord, parseJsonLine } from "../src/dispatch/harness/json_fields.ts";
import type { CallProgress } from "../src/schemas/mod.ts";
import { fixture } from "./helpers.ts";

/** The progress `parse` reports for every line of a recorded stream. */
async function progressOf(
  name: string,
  parse: (event: JsonRecord, channel: ProgressChannel) => void,
): Promise<CallProgress[]> {
  const seen: CallProgress[] = [];
  const channel = progressChannel((event) => seen.push(event));
  for (const line of (await Deno.readTextFile(fixture(`progress/${name}`))).split("\n")) {
    const event = parseJsonLine(line);
    if (event) parse(event, channel);
  }
  channel.flush();
  return seen;
}

function text(events: CallProgress[]): string {
  return events.map((e) => e.kind === "text" ? e.text : "").join("");
}

/** The events without their text, paths cut to the file name (the recording's HOME varies). */
function shape(events: CallProgress[]): unknown[] {
  const base = (path: string | null) =>
    path === null ? null : path.replace(/^\/tmp\/svc-agent-home-\w+\/work\//, "");
  return events.filter((e) => e.kind !== "text").map((e) =>
    e.kind === "tool"
      ? { ...e, target: base(e.target) }
      : e.kind === "file"
      ? { ...e, path: base(e.path) }
      : e
  );
}

Deno.test("claude: tool uses with their targets, the written file, a failed tool, the answer", async () => {
  const events = await progressOf("claude.jsonl", claudeProgress);
  assert.deepEqual(shape(events), [
    { kind: "tool", name: "Read", target: "README.md" },
    { kind: "tool", name: "Write", target: "NOTES.md" },
    { kind: "file", path: "NOTES.md", change: "write" },
    { kind: "tool", name: "Bash", target: "cat /nonexistent-file" },
    { kind: "error", message: "Exit code 1 cat: /nonexistent-file: No such file or directory" },
  ]);
  assert.match(text(events), /^tool said: 1\thello\n/);
});

Deno.test("codex: a command as it starts, the agent's message, the notice as an error", async () => {
  const events = await progressOf("codex.jsonl", codexProgress);
  assert.deepEqual(shape(events), [
    {
      kind: "error",
      message:
        "Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.",
    },
    { kind: "tool", name: "shell", target: "/bin/bash -lc 'echo hello > made.txt; ls'" },
  ]);
  assert.match(text(events), /^ran: Chunk ID: \w+\nWall time/);
});

Deno.test("opencode: each tool use with its target, the written file, the answer", async () => {
  const events = await progressOf("opencode.jsonl", opencodeProgress);
  assert.deepEqual(shape(events), [
    { kind: "tool", name: "write", target: "NOTES.md" },
    { kind: "file", path: "NOTES.md", change: "write" },
    { kind: "tool", name: "bash", target: "ls" },
  ]);
  assert.equal(text(events), "tool said: Wrote file successfully. | NOTES.md\n\n");
});

Deno.test("gemini: the tools of the document's stats, their failures, the answer", async () => {
  const seen: CallProgress[] = [];
  const doc = JSON.parse(await Deno.readTextFile(fixture("progress/gemini.json")));
  geminiProgress(doc, progressChannel((event) => seen.push(event)));
  assert.deepEqual(shape(seen), [
    { kind: "tool", name: "read_file", target: null },
    { kind: "error", message: "read_file: 1 failed" },
  ]);
  assert.match(text(seen), /^tool said: /);
});

Deno.test("the channel redacts a key split across deltas, strips terminal codes and clips targets", () => {
  const seen: CallProgress[] = [];
  const channel = progressChannel((event) => seen.push(event), {
    secrets: ["hunter2-secret-value"],
  });
  channel.text("the key is sk-ant-api03-Zq8vY2xW");
  channel.text("4tR6uP0oN3mL5kJ7hG9fD1sA and the password hunter2-");
  channel.text("secret-value, \u001b[31mred\u001b[0m done\n");
  channel.tool("Bash", `echo ${"x".repeat(1000)}`);
  channel.flush();
  const said = text(seen);
  assert.equal(said, "the key is [redacted] and the password [redacted], red done\n");
  const tool = seen.find((e) => e.kind === "tool");
  assert.ok(tool?.kind === "tool" && tool.target !== null && tool.target.length <= 240);
});
