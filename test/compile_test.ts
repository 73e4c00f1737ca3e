/**
 * `deno task compile`: one `svc` executable. `deno compile` needs its runtime stub `denort`,
 * which it downloads unless `DENORT_BIN` names one; on machines that can do neither, the end
 * to end test is reported as ignored (with the reason), never as passed.
 */
import assert from "node:assert/strict";
import { compileArgs, denortAvailable, denortMissingMessage } from "../scripts/compile.ts";
import { COMPILED_PERMISSION_FLAGS } from "../cli/permissions.ts";
import { ROOT, runCommand, tempDir } from "./helpers.ts";

const DENORT = denortAvailable();
const SKIP_REASON = `no denort ${Deno.version.deno} for ${Deno.build.target} ` +
  "(set DENORT_BIN, or let deno compile download it once)";

if (!DENORT) console.log(`compile_test: the compiled binary is not tested: ${SKIP_REASON}`);

Deno.test("deno task compile embeds the guest bootstrap, the bundled workflows and the board page, and bakes in the host's grants", () => {
  const args = compileArgs("/out/svc");
  assert.equal(args[0], "compile");
  for (const flag of COMPILED_PERMISSION_FLAGS) assert.ok(args.includes(flag), flag);
  assert.ok(!args.includes("-A") && !args.includes("--allow-all"));
  assert.ok(!args.some((a) => a.startsWith("--allow-net") || a.startsWith("--allow-sys")));
  const included = args.flatMap((a, i) => a === "--include" ? [args[i + 1]] : []);
  assert.deepEqual(included, [`${ROOT}/guest/`, `${ROOT}/bundled/`, `${ROOT}/page/`]);
  assert.equal(args[args.indexOf("--output") + 1], "/out/svc");
  assert.equal(args.at(-1), `${ROOT}/cli/main.ts`);
});

Deno.test({
  name: DENORT
    ? "the compiled svc runs a workflow end to end, its guests on the Deno of SVC_DENO or PATH"
    : `the compiled svc runs a workflow end to end [ignored: ${SKIP_REASON}]`,
  ignore: !DENORT,
  async fn() {
    await using work = await tempDir("svc-compile-");
    const binary = `${work.path}/svc`;
    const compiled = await runCommand(Deno.execPath(), ["task", "compile", "--output", binary]);
    assert.equal(compiled.code, 0, compiled.stderr);
    const env = { SVC_HOME: `${work.path}/home`, NO_COLOR: "1" };

    const help = await runCommand(binary, ["--help"], { env });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /workflow/);

    const run = await runCommand(
      binary,
      ["workflow", "run", `${ROOT}/examples/review_fanout.js`, "--fake-dispatch"],
      { env: { ...env, SVC_DENO: Deno.execPath() } },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).verdicts.length, 3);

    const noDeno = await runCommand(
      binary,
      ["workflow", "run", `${ROOT}/examples/review_fanout.js`, "--fake-dispatch"],
      { env: { ...env, PATH: "/nonexistent" } },
    );
    assert.equal(noDeno.code, 1);
    assert.match(noDeno.stderr, /Cannot start the guest: no Deno binary to run it/);
  },
});

Deno.test("a failed deno compile for another reason than denort keeps its own output", () => {
  assert.equal(denortMissingMessage('error: Module not found "file:///x.ts".'), undefined);
});

Deno.test({
  name: DENORT
    ? "offline, deno task compile prints its own message and no stack [ignored: a denort is at hand, so nothing is downloaded]"
    : "offline, deno task compile prints its own message and no stack",
  ignore: DENORT !== undefined,
  async fn() {
    await using work = await tempDir("svc-compile-");
    // The download goes through a proxy that answers nothing, wherever the test runs.
    const unreachable = "http://127.0.0.1:1";
    const compiled = await runCommand(
      Deno.execPath(),
      ["task", "-q", "compile", "--output", `${work.path}/svc`],
      {
        env: {
          HTTPS_PROXY: unreachable,
          HTTP_PROXY: unreachable,
          https_proxy: unreachable,
          http_proxy: unreachable,
          NO_PROXY: "",
          no_proxy: "",
          NO_COLOR: "1",
        },
      },
    );
    assert.equal(compiled.code, 1, compiled.stderr);
    assert.equal(compiled.stdout, "");
    const lines = compiled.stderr.trim().split("\n");
    assert.deepEqual(lines.length, 1, compiled.stderr);
    assert.match(
      lines[0]!,
      new RegExp(
        `^compile: cannot compile svc: deno compile needs denort ${Deno.version.deno} for ` +
          `${Deno.build.target} and could not download it \\(offline\\?\\); set DENORT_BIN`,
      ),
    );
    assert.doesNotMatch(compiled.stderr, /\bat \S+:\d+|Stack backtrace|panicked/);
    await assert.rejects(Deno.stat(`${work.path}/svc`), Deno.errors.NotFound);
  },
});
