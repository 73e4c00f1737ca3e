import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { tempDir } from "./helpers.ts";

async function git(cwd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args],
    cwd,
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
}

Deno.test("memory search over HTTP finds the caller's cards and run results, and nothing of another owner's", async () => {
  await using d = await startDashboard();
  await d.json("/api/board/write", {
    token: TOKENS.alice,
    body: { action: "new", mode: "apply", title: "Migrate the flamingo service" },
  });
  await d.json("/api/board/write", {
    token: TOKENS.bob,
    body: { action: "new", mode: "apply", title: "Bob's flamingo notes" },
  });
  const run = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return "the flamingo report is ready";`, fake_dispatch: true },
  });
  await readEvents(
    await d.request(`/api/workflow/${run.body.run_id}/events`, { token: TOKENS.alice }),
  );
  const found = await d.json("/api/memory/search?q=flamingo", { token: TOKENS.alice });
  assert.equal(found.status, 200);
  const hits = found.body.hits as Array<{ kind: string; title: string }>;
  assert.deepEqual(hits.map((h) => h.kind).sort(), ["card", "run"]);
  assert.ok(hits.every((h) => !h.title.includes("Bob")));
  const cards = await d.json("/api/memory/search?q=flamingo&kinds=card", { token: TOKENS.bob });
  assert.deepEqual((cards.body.hits as Array<{ title: string }>).map((h) => h.title), [
    "Bob's flamingo notes",
  ]);
  for (const bad of ["", "?q=", `?q=${"x".repeat(300)}`, "?q=a&kinds=files"]) {
    const answer = await d.json(`/api/memory/search${bad}`, { token: TOKENS.alice });
    assert.equal(answer.status, 400, bad);
  }
});

Deno.test("a review over HTTP reviews a working directory's git diff and lists its findings; another owner gets 404", async () => {
  // Alice's workspace root holds the repository and a folder that is none.
  await using root = await tempDir("svc-review-root-");
  const repo = { path: `${root.path}/repo` };
  await Deno.mkdir(repo.path);
  await Deno.mkdir(`${root.path}/plain`);
  await using d = await startDashboard({
    config: ConfigSchema.parse({ workspaces: { alice: [root.path] } }),
  });
  await git(repo.path, "init", "-q");
  await Deno.writeTextFile(`${repo.path}/a.js`, "export const a = 1;\n");
  await git(repo.path, "add", ".");
  await git(repo.path, "commit", "-q", "-m", "one");
  await Deno.writeTextFile(`${repo.path}/a.js`, "export const a = 2;\n");
  const started = await d.json("/api/reviews", {
    token: TOKENS.alice,
    body: { workdir: repo.path, fake_dispatch: true },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  await readEvents(await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }));
  const detail = await d.json(`/api/reviews/${runId}`, { token: TOKENS.alice });
  assert.equal(detail.status, 200);
  assert.equal((detail.body.run as { state: string }).state, "succeeded");
  assert.ok(Array.isArray(detail.body.findings));
  const list = await d.json("/api/reviews", { token: TOKENS.alice });
  assert.deepEqual((list.body.reviews as Array<{ run_id: string }>).map((r) => r.run_id), [runId]);
  assert.equal((await d.json(`/api/reviews/${runId}`, { token: TOKENS.bob })).status, 404);
  assert.deepEqual((await d.json("/api/reviews", { token: TOKENS.bob })).body.reviews, []);
  const notRepo = await d.json("/api/reviews", {
    token: TOKENS.alice,
    body: { workdir: `${root.path}/plain` },
  });
  assert.equal(notRepo.status, 400);
});

Deno.test("the collaborations route lists what is recorded, the caller's only", async () => {
  await using d = await startDashboard();
  assert.deepEqual((await d.json("/api/collaborations", { token: TOKENS.alice })).body, {
    collaborations: [],
    next_cursor: null,
  });
  await d.services.collaborations.record({
    direction: "outbound",
    peer: "https://agents.example.com/reviewer",
    state: "completed",
  }, { owner: "alice" });
  const alice = await d.json("/api/collaborations", { token: TOKENS.alice });
  assert.equal((alice.body.collaborations as unknown[]).length, 1);
  assert.deepEqual(
    (await d.json("/api/collaborations", { token: TOKENS.bob })).body.collaborations,
    [],
  );
});
