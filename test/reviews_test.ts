import assert from "node:assert/strict";
import { safeGit } from "../src/worktrees/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { Caller } from "../src/ledger/mod.ts";
import { DIFF_LIMITS } from "../src/reviews/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { ADMIN, tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };

/** Runs git in `dir` without the machine's or the user's configuration. */
async function git(dir: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args],
    cwd: dir,
    env: { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

/** A repository with one commit (`src/a.ts`, `README.md`), clean. */
async function repository(dir: string): Promise<void> {
  await git(dir, "init", "-q", "-b", "main");
  await Deno.mkdir(`${dir}/src`);
  await Deno.writeTextFile(`${dir}/src/a.ts`, "export const a = 1;\n");
  await Deno.writeTextFile(`${dir}/README.md`, "# demo\n");
  await git(dir, "add", ".");
  await git(dir, "commit", "-q", "-m", "first");
}

async function withServices(body: (services: Services, repo: string) => Promise<void>) {
  await using home = await tempDir("svc-home-");
  await using repo = await tempDir("svc-repo-");
  await repository(repo.path);
  await using services = await openServices({ home: home.path });
  await body(services, repo.path);
}

async function refused(promise: Promise<unknown>, code: string, pattern?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof SvcError, String(error));
    assert.equal(error.code, code);
    if (pattern) assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("a review reviews each changed file of the working tree with one agent and lists the findings", async () => {
  await withServices(async (services, repo) => {
    await Deno.writeTextFile(`${repo}/src/a.ts`, "export const a = 2;\nexport const b = a;\n");
    await Deno.writeTextFile(`${repo}/README.md`, "# demo\n\nMore words.\n");
    const started = await services.reviews.start({ workdir: repo, fake_dispatch: true }, ALICE);
    const run = await services.runs.wait(started.run_id, ALICE);
    assert.equal(run.state, "succeeded", JSON.stringify(run.error));
    assert.equal(run.name, "svc-review");
    assert.equal(run.workdir, await Deno.realPath(repo));
    assert.equal(run.calls.total, 2);
    const detail = await services.reviews.get(started.run_id, ALICE);
    assert.ok(detail);
    assert.equal(detail.review.files, 2);
    assert.equal(detail.review.base, "HEAD");
    assert.equal(detail.review.commit, (await git(repo, "rev-parse", "HEAD")).trim());
    // The fake provider answers the schema with one finding a file; the path is the file's.
    assert.deepEqual(
      detail.findings?.map((f) => [f.path, f.severity]).sort(),
      [["README.md", "info"], ["src/a.ts", "info"]],
    );
    const journal = await services.runs.journal(started.run_id, ALICE);
    assert.deepEqual(journal.map((e) => e.label).sort(), ["review README.md", "review src/a.ts"]);
    assert.ok(journal.every((e) => e.phase === "review"));
    const listed = await services.reviews.list(ALICE);
    assert.deepEqual(listed.items.map((r) => [r.run_id, r.state, r.findings]), [
      [started.run_id, "succeeded", 2],
    ]);
  });
});

Deno.test("a review with no changed files succeeds with no findings and calls no agent", async () => {
  await withServices(async (services, repo) => {
    const started = await services.reviews.start({ workdir: repo, fake_dispatch: true }, ALICE);
    const run = await services.runs.wait(started.run_id, ALICE);
    assert.equal(run.state, "succeeded");
    assert.equal(run.calls.total, 0);
    assert.deepEqual((await services.reviews.get(started.run_id, ALICE))?.findings, []);
  });
});

Deno.test("a review against a base ref reviews the commits since it, from a subdirectory only its files", async () => {
  await withServices(async (services, repo) => {
    await Deno.writeTextFile(`${repo}/src/a.ts`, "export const a = 3;\n");
    await Deno.writeTextFile(`${repo}/README.md`, "# changed\n");
    await git(repo, "commit", "-q", "-am", "second");
    const whole = await services.reviews.start(
      { workdir: repo, base: "HEAD~1", fake_dispatch: true },
      ALICE,
    );
    await services.runs.wait(whole.run_id, ALICE);
    assert.equal((await services.reviews.get(whole.run_id, ALICE))?.findings?.length, 2);
    const sub = await services.reviews.start(
      { workdir: `${repo}/src`, base: "main~1", fake_dispatch: true },
      ALICE,
    );
    await services.runs.wait(sub.run_id, ALICE);
    assert.deepEqual(
      (await services.reviews.get(sub.run_id, ALICE))?.findings?.map((f) => f.path),
      ["a.ts"],
    );
  });
});

Deno.test("hostile base refs are refused before a run starts, and a ref that names no commit too", async () => {
  await withServices(async (services, repo) => {
    for (
      const base of [
        "--output=/tmp/svc-pwned",
        "-p",
        "HEAD..main",
        "HEAD:README.md",
        "main branch",
        "main\u0000",
        "@{-1}",
        "x".repeat(201),
        "",
      ]
    ) {
      await refused(
        services.reviews.start({ workdir: repo, base, fake_dispatch: true }, ALICE),
        "invalid_argument",
        /'base' must be a branch, tag, commit or revision/,
      );
    }
    await refused(
      services.reviews.start({ workdir: repo, base: "no-such-branch", fake_dispatch: true }, ALICE),
      "invalid_argument",
      /names no commit/,
    );
    await assert.rejects(Deno.stat("/tmp/svc-pwned"));
    assert.deepEqual(await services.runs.list(ALICE), []);
  });
});

Deno.test("a directory that is not a git repository, or no directory, is refused with invalid_argument", async () => {
  await withServices(async (services) => {
    await using plain = await tempDir("svc-plain-");
    await refused(
      services.reviews.start({ workdir: plain.path, fake_dispatch: true }, ALICE),
      "invalid_argument",
      /is not in a git repository/,
    );
    await refused(
      services.reviews.start({ workdir: `${plain.path}/missing`, fake_dispatch: true }, ALICE),
      "invalid_argument",
      /is not an existing directory/,
    );
    await refused(
      services.reviews.start({ workdir: "", fake_dispatch: true }, ALICE),
      "invalid_request",
      /'workdir'/,
    );
    assert.deepEqual(await services.runs.list(ALICE), []);
  });
});

Deno.test("another owner neither lists nor reads a review; a run that is no review is no review", async () => {
  await withServices(async (services, repo) => {
    const review = await services.reviews.start({ workdir: repo, fake_dispatch: true }, ALICE);
    await services.runs.wait(review.run_id, ALICE);
    assert.equal(await services.reviews.get(review.run_id, BOB), undefined);
    assert.deepEqual((await services.reviews.list(BOB)).items, []);
    assert.deepEqual(
      (await services.reviews.list(ADMIN)).items.map((r) => r.run_id),
      [review.run_id],
    );
    assert.ok(await services.reviews.get(review.run_id, ADMIN));
    // A script that merely calls itself svc-review.
    const impostor = await services.runs.start({
      script: 'export const meta = { name: "svc-review" };\nreturn { findings: [], files: 0 };',
      fake_dispatch: true,
    }, ALICE);
    await services.runs.wait(impostor.run_id, ALICE);
    assert.equal(await services.reviews.get(impostor.run_id, ALICE), undefined);
    assert.deepEqual((await services.reviews.list(ALICE)).items.map((r) => r.run_id), [
      review.run_id,
    ]);
    assert.equal(await services.reviews.get("run_../../x", ALICE), undefined);
    await refused(services.reviews.list(ALICE, { cursor: "nope" }), "invalid_request", /'cursor'/);
  });
});

Deno.test("a review takes at most the file limit of changed files and cuts long patches", async () => {
  await withServices(async (services, repo) => {
    for (let i = 0; i < DIFF_LIMITS.files + 2; i++) {
      await Deno.writeTextFile(`${repo}/f${String(i).padStart(2, "0")}.txt`, `file ${i}\n`);
    }
    await Deno.writeTextFile(`${repo}/README.md`, "long line\n".repeat(10_000));
    await git(repo, "add", ".");
    const started = await services.reviews.start({ workdir: repo, fake_dispatch: true }, ALICE);
    const run = await services.runs.wait(started.run_id, ALICE);
    assert.equal(run.state, "succeeded", JSON.stringify(run.error));
    const detail = await services.reviews.get(started.run_id, ALICE);
    assert.equal(detail?.review.files, DIFF_LIMITS.files);
    assert.equal(detail?.review.skipped_files, 3);
    assert.equal(detail?.review.truncated, true);
    assert.equal(run.calls.total, DIFF_LIMITS.files);
  });
});

Deno.test("a review runs none of the commands the repository's configuration names", async () => {
  await withServices(async (services, repo) => {
    const marker = `${repo}.pwned`;
    await Deno.writeTextFile(`${repo}/.git/hook.sh`, `#!/bin/sh\ntouch '${marker}'\n`);
    await Deno.chmod(`${repo}/.git/hook.sh`, 0o755);
    await git(repo, "config", "core.fsmonitor", `${repo}/.git/hook.sh`);
    await git(repo, "config", "diff.external", `${repo}/.git/hook.sh`);
    await git(repo, "config", "diff.evil.textconv", `${repo}/.git/hook.sh`);
    await Deno.writeTextFile(`${repo}/.gitattributes`, "*.ts diff=evil\n");
    await Deno.writeTextFile(`${repo}/src/a.ts`, "export const a = 4;\n");
    const started = await services.reviews.start({ workdir: repo, fake_dispatch: true }, ALICE);
    const run = await services.runs.wait(started.run_id, ALICE);
    assert.equal(run.state, "succeeded");
    await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
  });
});

Deno.test("git output past its byte limit is cut there, git is stopped, and the result says so", async () => {
  await using repo = await tempDir("svc-repo-");
  await repository(repo.path);
  await Deno.writeTextFile(`${repo.path}/big.txt`, "0123456789abcdef\n".repeat(200_000));
  await git(repo.path, "add", ".");
  const cut = await safeGit(["diff", "--no-ext-diff", "--cached"], { cwd: repo.path }, {
    maxStdoutBytes: 10_000,
  });
  assert.equal(cut.truncated, true);
  assert.equal(new TextEncoder().encode(cut.stdout).length, 10_000);
  const whole = await safeGit(["diff", "--no-ext-diff", "--cached", "--stat"], { cwd: repo.path }, {
    maxStdoutBytes: 10_000,
  });
  assert.equal(whole.truncated, undefined);
  assert.match(whole.stdout, /big\.txt/);
});
