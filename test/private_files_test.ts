/**
 * What svc leaves on disk is its user's alone: `SVC_HOME`, the board and every run's files,
 * on both platforms, whatever the umask; a data directory others can read is warned about.
 */
import assert from "node:assert/strict";
import { openLedger } from "../src/ledger/mod.ts";
import { denoPlatform } from "../src/platform/deno.ts";
import { type Platform, setPlatform } from "../src/platform/mod.ts";
import { fixture, tempDir } from "./helpers.ts";

/**
 * Runs the writer fixture under the umask 000, which hides nothing: every mode it leaves is the
 * one svc asked for (the usual 022 would still show a 0644, but 077 would hide every bug).
 */
async function writeUnderOpenUmask(scenario: string, dir: string): Promise<string> {
  const output = await new Deno.Command("sh", {
    args: [
      "-c",
      'umask 000 && exec "$@"',
      "sh",
      Deno.execPath(),
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-run",
      "--allow-sys=uid,homedir",
      fixture("private_files_writer.ts"),
      scenario,
      dir,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  assert.equal(output.code, 0, decoder.decode(output.stderr));
  return decoder.decode(output.stdout).trim();
}

/** Every path under `dir` (itself included) whose mode lets group or others in, with the mode. */
async function openToOthers(dir: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (path: string) => {
    const info = await Deno.lstat(path);
    if (info.isSymlink) return;
    if ((info.mode! & 0o077) !== 0) found.push(`${path} ${(info.mode! & 0o777).toString(8)}`);
    if (!info.isDirectory) return;
    for await (const entry of Deno.readDir(path)) await visit(`${path}/${entry.name}`);
  };
  await visit(dir);
  return found;
}

const modeOf = (path: string) => Deno.statSync(path).mode! & 0o7777;

Deno.test("a new SVC_HOME, its board, its ledger and a run's script, input and result are private to their user", async () => {
  await using temp = await tempDir();
  const home = `${temp.path}/data/home`;
  const runId = await writeUnderOpenUmask("services", home);
  const names = [...Deno.readDirSync(`${home}/runs/${runId}`)].map((entry) => entry.name);
  for (const name of ["input.json", "result.json", "script.js", "status.json"]) {
    assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
  }
  assert.ok(modeOf(`${home}/board/board.kv`) >= 0);
  assert.ok(modeOf(`${home}/svc.kv`) >= 0);
  // The parent the host created on the way is private too.
  assert.deepEqual(await openToOthers(`${temp.path}/data`), []);
});

for (const name of ["deno", "node"]) {
  Deno.test(`the ${name} platform creates directories 0700 and writes files 0600, an existing file's mode included`, async () => {
    await using temp = await tempDir();
    await writeUnderOpenUmask(name, temp.path);
    assert.equal(modeOf(`${temp.path}/a`), 0o700);
    assert.equal(modeOf(`${temp.path}/a/b`), 0o700);
    assert.equal(modeOf(`${temp.path}/a/b/new.json`), 0o600);
    assert.equal(modeOf(`${temp.path}/a/old.json`), 0o600);
    assert.equal(modeOf(`${temp.path}/a/token`), 0o400);
  });
}

Deno.test("a KV store the platform creates is private, and so are its journal files", async () => {
  await using temp = await tempDir();
  const names = await writeUnderOpenUmask("kv", temp.path);
  assert.ok(names.split(" ").includes("store.kv-wal"), names);
  assert.deepEqual(await openToOthers(temp.path), []);
});

/** Runs `action` with stderr recorded instead of written; returns what it wrote. */
async function stderrOf(action: () => Promise<void>): Promise<string> {
  let written = "";
  const recording: Platform = { ...denoPlatform, writeStderr: (text) => void (written += text) };
  setPlatform(recording);
  try {
    await action();
  } finally {
    setPlatform(denoPlatform);
  }
  return written;
}

Deno.test("opening a ledger whose SVC_HOME others can read warns once on stderr, and a private one not at all", async () => {
  await using shared = await tempDir();
  await Deno.chmod(shared.path, 0o755);
  await using own = await tempDir();
  const warnings = await stderrOf(async () => {
    for (const home of [shared.path, shared.path, own.path]) (await openLedger(home)).close();
  });
  const lines = warnings.split("\n").filter(Boolean);
  assert.equal(lines.length, 1, warnings);
  assert.match(
    lines[0]!,
    /^svc: warning: the data directory .* is open to other users .*\(mode 0755\)/,
  );
  assert.ok(lines[0]!.includes(`chmod 700 ${shared.path}`));
  assert.equal(modeOf(shared.path), 0o755, "the mode is the operator's to change");
});
