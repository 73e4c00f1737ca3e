import assert from "node:assert/strict";
import { HOST_ENV_VARS } from "../cli/permissions.ts";
import { ROOT, runCommand, svcCommand, tempDir } from "./helpers.ts";
import { stub } from "./harness_helpers.ts";

const README = await Deno.readTextFile(`${ROOT}/README.md`);
const PINNED = (await Deno.readTextFile(`${ROOT}/.deno-version`)).trim();
/** The documents the README's reference material lives in, by file name. */
const DOCS: Record<string, string> = Object.fromEntries(
  await Promise.all(
    [...Deno.readDirSync(`${ROOT}/docs`)].filter((e) => e.isFile && e.name.endsWith(".md")).map(
      async (e) => [e.name, await Deno.readTextFile(`${ROOT}/docs/${e.name}`)] as const,
    ),
  ),
);

/** Lines of a document's `sh` blocks, and commands shown inline: what a reader would type. */
function commandsOf(text: string): string[] {
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split("\n"));
  const inline = [...text.matchAll(/`(npx -y deno@[^`]+)`/g)].map((m) => m[1]!);
  return [...new Set([...blocks, ...inline].map((line) => line.trim()).filter(Boolean))];
}

/** The README's commands. */
function readmeCommands(): string[] {
  return commandsOf(README);
}

/** The commands of the README and of every document under docs/. */
function allCommands(): string[] {
  return [...new Set([README, ...Object.values(DOCS)].flatMap(commandsOf))];
}

/** The `sh` blocks of the README's tour, in order. */
function tourBlocks(): string[][] {
  const tour = README.slice(README.indexOf("## A five-minute tour"), README.indexOf("## Install"));
  return [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    m[1]!.split("\n").map((l) => l.trim()).filter(Boolean)
  );
}

function sh(command: string, home: string) {
  return runCommand("bash", ["-c", command], { env: { SVC_HOME: home, NO_COLOR: "1" } });
}

Deno.test("every command of the README and the docs that runs Deno uses the pinned Deno from the npm registry", () => {
  const commands = allCommands();
  const deno = commands.filter((command) => /(^|\s)deno(@|\s)/.test(command));
  assert.ok(deno.length >= 10, `found ${deno.join(" | ")}`);
  for (const command of deno) {
    // A command may set variables first (`SVC_TEST_AGENTS=... npx -y deno@... task ...`).
    const call = command.replace(/^([A-Z_]+=\S+\s+)+/, "");
    assert.ok(call.startsWith(`npx -y deno@${PINNED} task `), command);
  }
  assert.ok(readmeCommands().filter((c) => c.startsWith("npx -y deno@")).length >= 5);
});

Deno.test("docs/INSTALL.md shows the three ways in: checkout, compiled binary, npm package", () => {
  const commands = commandsOf(DOCS["INSTALL.md"]!);
  for (
    const expected of [
      `npx -y deno@${PINNED} task svc workflow run examples/review_fanout.js --fake-dispatch`,
      `npx -y deno@${PINNED} task compile`,
      `npx -y deno@${PINNED} task build:npm`,
      "npx svc --help",
      "npx svc workflow run node_modules/svc/examples/review_fanout.js --fake-dispatch",
    ]
  ) {
    assert.ok(commands.includes(expected), expected);
  }
});

Deno.test("docs/PERMISSIONS.md names every variable the host is granted", () => {
  const section = DOCS["PERMISSIONS.md"]!;
  assert.ok(section.startsWith("# Permissions\n"));
  for (const name of HOST_ENV_VARS) assert.ok(section.includes(`\`${name}\``), name);
});

Deno.test("the README's test command is the one .ci/run runs", async () => {
  const ci = await Deno.readTextFile(`${ROOT}/.ci/run`);
  assert.ok(readmeCommands().includes(`npx -y deno@${PINNED} task test`));
  assert.match(ci, /deno\(\) \{ npx -y "deno@\$\{DENO_VERSION\}" "\$@"; \}/);
  assert.match(ci, /DENO_VERSION="\$\(tr -d '\[:space:\]' < \.deno-version\)"/);
  assert.match(ci, /^deno task test /m);
});

Deno.test("the README's tour runs as written: a first workflow, the runs at a terminal, a real agent's run, resume", async () => {
  await using home = await tempDir();
  const [first, terminal, real, resume] = tourBlocks();
  assert.ok(first && terminal && real && resume, "the tour has its four steps' commands");

  // 1. A first workflow: the example's product on stdout, its end line on stderr.
  assert.equal(first.length, 1);
  const run = first[0]!;
  assert.ok(run.includes("workflow run examples/review_fanout.js --fake-dispatch"), run);
  const result = await sh(run, home.path);
  assert.equal(result.code, 0, result.stderr);
  const product = JSON.parse(result.stdout);
  assert.equal(product.files.length, 3);
  assert.equal(product.verdicts.length, 3);
  for (const verdict of product.verdicts) {
    assert.ok(["low", "medium", "high"].includes(verdict.severity));
  }
  const runId = /svc: run (run_\w+) succeeded/.exec(result.stderr)?.[1];
  assert.ok(runId, result.stderr);

  // 2. The same run, seen from another command.
  const [list, status] = terminal;
  assert.ok(list?.endsWith(" svc workflow list") && status?.endsWith(" svc status"));
  const listed = await sh(list!, home.path);
  assert.equal(listed.code, 0, listed.stderr);
  assert.ok(listed.stdout.includes(runId), listed.stdout);
  const pulse = await sh(status!, home.path);
  assert.equal(pulse.code, 0, pulse.stderr);
  assert.match(pulse.stdout, /^runs\s+0 running/m);

  // 3. A real agent: the configuration shown is valid, and svc doctor reads it. The run itself
  // is the first command without the fake provider (the real agents' tests run such runs).
  const { ConfigSchema } = await import("../src/config/mod.ts");
  const tour = README.slice(README.indexOf("## A five-minute tour"), README.indexOf("## Install"));
  const config = /```json\n([\s\S]*?)```/.exec(tour)?.[1];
  assert.ok(config, "the tour shows a configuration");
  assert.ok(ConfigSchema.safeParse(JSON.parse(config)).success);
  await Deno.writeTextFile(`${home.path}/config.json`, config);
  const [doctor, realRun] = real;
  assert.ok(doctor?.endsWith(" svc doctor"), doctor);
  const checked = await sh(doctor!, home.path);
  assert.equal(checked.code, 0, checked.stderr);
  assert.match(checked.stdout, /claude/);
  assert.equal(realRun, `${run.replace(" --fake-dispatch", "")} --budget-tokens 500000`);
  // The run itself, through the Claude Code harness, with the harness tests' stand-in for the
  // claude binary (the real Claude Code's own tests run it against a model stand-in).
  const withStandIn = {
    claude: { ...JSON.parse(config).providers.claude, command: stub("claude") },
  };
  await Deno.writeTextFile(`${home.path}/config.json`, JSON.stringify({ providers: withStandIn }));
  const ran = await sh(realRun!, home.path);
  assert.equal(ran.code, 0, ran.stderr);
  // The stand-in answers text, never the severity schema's object: those three calls fail.
  assert.match(ran.stderr, /svc: run run_\w+ succeeded \(9 calls: 6 live, 0 replayed, 3 failed\)/);
  assert.match(JSON.parse(ran.stdout).files.join(), /run_manager/);
  assert.doesNotMatch(ran.stderr, /fake provider/);
  await Deno.remove(`${home.path}/config.json`);

  // 4. Resume: every call of the first run replays from its journal.
  assert.equal(resume.length, 1);
  const again = await sh(resume[0]!.replace(/run_01m8\S*/, runId), home.path);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(JSON.parse(again.stdout), product);
  assert.match(again.stderr, /succeeded \(9 calls: 0 live, 9 replayed\)/);
  assert.ok(README.includes("`succeeded (9 calls: 0 live, 9 replayed)`"));
});

Deno.test("docs/BENCHMARKS.md's benchmark command runs and prints its figures", async () => {
  await using home = await tempDir();
  const command = commandsOf(DOCS["BENCHMARKS.md"]!).find((c) => c.endsWith("task bench"));
  assert.ok(command, "docs/BENCHMARKS.md shows the benchmark");
  // The soak and the long fuzz run in their shortest forms, at the fixed seed: the suite must
  // stay quick and deterministic.
  const result = await sh(
    `${command} --runs 1 --soak-s 20 --fuzz-scale 1 --fuzz-seed 20261122`,
    home.path,
  );
  assert.equal(result.code, 0, result.stderr);
  const { figures } = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as {
    figures: Record<string, { value: { median: number } | number | null; ratio?: number | null }>;
  };
  const median = (key: string) => {
    const value = figures[key]?.value;
    return typeof value === "number" ? value : value?.median ?? Number.NaN;
  };
  for (
    const key of [
      "first_call_in_process_ms",
      "cli_task_ms",
      "chain_step_ms",
      "fanout_step_ms",
      "resume_chain_ms",
      "bare_commit_ms",
      "fanout_calls_per_s",
      "host_rss_mib",
      "guest_rss_mib",
    ]
  ) {
    assert.ok(median(key) > 0, `${key}: ${JSON.stringify(figures[key])}`);
  }
  // Every figure measured against a baseline carries its ratio.
  for (
    const key of ["first_call_in_process_ms", "cli_task_ms", "chain_step_ms", "resume_chain_ms"]
  ) {
    assert.equal(typeof figures[key]?.ratio, "number", key);
  }
  // The pre-started guest has its place, measured once the engine offers it.
  assert.ok("first_call_prestarted_guest_ms" in figures);
});

Deno.test("docs/CONFIGURATION.md's configuration example is a valid configuration", async () => {
  const { ConfigSchema } = await import("../src/config/mod.ts");
  const block = /## Providers and configuration[\s\S]*?```json\n([\s\S]*?)```/.exec(
    DOCS["CONFIGURATION.md"]!,
  )?.[1];
  assert.ok(block, "docs/CONFIGURATION.md shows a configuration");
  const parsed = ConfigSchema.safeParse(JSON.parse(block));
  assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
  assert.deepEqual(Object.keys(parsed.data.providers).sort(), [
    "anthropic",
    "claude",
    "codex",
    "gemini",
    "openai",
    "opencode",
  ]);
});

Deno.test("every image the README and the docs show is a PNG in the repository, small enough to clone", async () => {
  const shown = (text: string) => [...text.matchAll(/!\[[^\]]+\]\(([^)]+)\)/g)].map((m) => m[1]!);
  const images = shown(README);
  assert.ok(images.includes("docs/images/run-page.png"), "the README shows the run page");
  const inDocs = Object.values(DOCS).flatMap(shown).map((image) => `docs/${image}`);
  assert.ok(inDocs.includes("docs/images/board-page.png"), "docs/DASHBOARD.md shows the board");
  for (const image of [...images, ...inDocs]) {
    const bytes = await Deno.readFile(`${ROOT}/${image}`);
    assert.deepEqual([...bytes.slice(1, 4)], [0x50, 0x4e, 0x47], `${image} is a PNG`);
    assert.ok(bytes.length < 300_000, `${image} is ${bytes.length} bytes`);
  }
});

Deno.test("docs/A2A.md's commands start the A2A server and read its card and health", async () => {
  const block = /```sh\n([\s\S]*?)```/.exec(DOCS["A2A.md"]!)?.[1];
  assert.ok(block, "docs/A2A.md shows how to start the server");
  const [exported, start, ...reads] = block.split("\n").filter(Boolean);
  const tokens = /^export SVC_DASHBOARD_OWNER_TOKENS=(\S+)$/.exec(exported!)?.[1];
  assert.ok(tokens, exported);
  assert.equal(start, `npx -y deno@${PINNED} task svc a2a-server`);
  await using home = await tempDir("svc-a2a-doc-");
  // The same command on a free port (the documented one may be taken), through the launcher.
  const child = svcCommand({
    args: ["a2a-server", "--port", "0"],
    env: { SVC_HOME: home.path, SVC_DASHBOARD_OWNER_TOKENS: tokens, NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let url: string | undefined;
  while (url === undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += value;
    url = /A2A server on (http:\/\/\S+)/.exec(seen)?.[1];
  }
  try {
    assert.ok(url, seen);
    assert.equal(reads.length, 2);
    const ran = await runCommand(
      "bash",
      ["-euo", "pipefail", "-c", reads.join("\n").replaceAll("http://127.0.0.1:41523", url)],
    );
    assert.equal(ran.code, 0, ran.stderr);
    const [card, health] = ran.stdout.split(/(?<=\})(?=\{)/).map((part) => JSON.parse(part));
    assert.equal(card.supportedInterfaces[0].protocolVersion, "1.0");
    assert.equal(health.status, "ok");
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reader.cancel().catch(() => {});
  }
});
