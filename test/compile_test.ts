/**
 * `deno task compile`: one `svc` executable. `deno compile` needs its runtime stub `denort`,
 * which it downloads unless `DENORT_BIN` names one; on machines that can do neither, the end
 * to end test is reported as ignored (with the reason), never as passed.
 */
import assert from "node:assert/strict";
import { compileArgs, denortAvailable } from "../scripts/compile.ts";
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
