import assert from "node:assert/strict";
import { HOST_ENV_VARS } from "../cli/permissions.ts";
import { ROOT, runCommand, tempDir } from "./helpers.ts";

const README = await Deno.readTextFile(`${ROOT}/README.md`);
const PINNED = (await Deno.readTextFile(`${ROOT}/.deno-version`)).trim();

/** Lines of the README's `sh` blocks, and commands shown inline: what a reader would type. */
function readmeCommands(): string[] {
  const blocks = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split("\n"));
  const inline = [...README.matchAll(/`(npx -y deno@[^`]+)`/g)].map((m) => m[1]!);
  return [...new Set([...blocks, ...inline].map((line) => line.trim()).filter(Boolean))];
}

function sh(command: string, home: string) {
  return runCommand("bash", ["-c", command], { env: { SVC_HOME: home, NO_COLOR: "1" } });
}

Deno.test("every README command that runs Deno uses the pinned Deno from the npm registry", () => {
  const commands = readmeCommands();
  const deno = commands.filter((command) => /(^|\s)deno(@|\s)/.test(command));
  assert.ok(deno.length >= 5, `found ${deno.join(" | ")}`);
  for (const command of deno) {
    assert.ok(command.startsWith(`npx -y deno@${PINNED} task `), command);
  }
});

Deno.test("the README shows the three ways in: checkout, compiled binary, npm package", () => {
  const commands = readmeCommands();
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

Deno.test("the README's Permissions section names every variable the host is granted", () => {
  const section = README.slice(README.indexOf("## Permissions"));
  for (const name of HOST_ENV_VARS) assert.ok(section.includes(`\`${name}\``), name);
});

Deno.test("the README's test command is the one .ci/run runs", async () => {
  const ci = await Deno.readTextFile(`${ROOT}/.ci/run`);
  assert.ok(readmeCommands().includes(`npx -y deno@${PINNED} task test`));
  assert.match(ci, /deno\(\) \{ npx -y "deno@\$\{DENO_VERSION\}" "\$@"; \}/);
  assert.match(ci, /DENO_VERSION="\$\(tr -d '\[:space:\]' < \.deno-version\)"/);
  assert.match(ci, /^deno task test /m);
});

Deno.test("the README's main command runs the example workflow and prints its product", async () => {
  await using home = await tempDir();
  const command = readmeCommands().find((c) => c.includes("workflow run"));
  assert.ok(command, "the README shows a workflow run");
  const result = await sh(command, home.path);
  assert.equal(result.code, 0, result.stderr);
  const product = JSON.parse(result.stdout);
  assert.equal(product.files.length, 3);
  assert.equal(product.verdicts.length, 3);
  for (const verdict of product.verdicts) {
    assert.ok(["low", "medium", "high"].includes(verdict.severity));
  }
  assert.match(result.stderr, /svc: run run_\w+ succeeded/);
});

Deno.test("the README's benchmark command runs and prints its figures", async () => {
  await using home = await tempDir();
  const command = readmeCommands().find((c) => c.endsWith("task bench"));
  assert.ok(command, "the README shows the benchmark");
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

Deno.test("the README's configuration example is a valid configuration", async () => {
  const { ConfigSchema } = await import("../src/config/mod.ts");
  const block = /## Providers and configuration[\s\S]*?```json\n([\s\S]*?)```/.exec(README)?.[1];
  assert.ok(block, "the README shows a configuration");
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

Deno.test("every image the README shows is a PNG in the repository, small enough to clone", async () => {
  const images = [...README.matchAll(/!\[[^\]]+\]\(([^)]+)\)/g)].map((m) => m[1]!);
  assert.ok(images.includes("docs/images/run-page.png"), "the README shows the run page");
  for (const image of images) {
    const bytes = await Deno.readFile(`${ROOT}/${image}`);
    assert.deepEqual([...bytes.slice(1, 4)], [0x50, 0x4e, 0x47], `${image} is a PNG`);
    assert.ok(bytes.length < 300_000, `${image} is ${bytes.length} bytes`);
  }
});
