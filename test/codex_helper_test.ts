/**
 * svc's reading of Codex's temp-directory check (codex-rs/arg0: `codex_home.starts_with(
 * temp_dir())`, component by component): which environments need svc's temp directory, and
 * which cannot be helped because the configuration fixes TMPDIR.
 */
import assert from "node:assert/strict";
import { codexHelperPlan, pathStartsWith } from "../src/dispatch/harness/codex_helper.ts";

const STATE = "/srv/svc/harness/codex";

Deno.test("Codex's check compares whole path components, as Rust's Path::starts_with", () => {
  assert.equal(pathStartsWith("/tmp/h/.codex", "/tmp"), true);
  assert.equal(pathStartsWith("/tmp/h/.codex", "/tmp/"), true);
  assert.equal(pathStartsWith("/tmp//h/./.codex", "/tmp/h"), true);
  assert.equal(pathStartsWith("/tmpfoo/.codex", "/tmp"), false);
  assert.equal(pathStartsWith("/home/u/.codex", "/tmp"), false);
  // An empty TMPDIR is a prefix of every path, as Rust has it.
  assert.equal(pathStartsWith("/home/u/.codex", ""), true);
  assert.equal(pathStartsWith("/tmp/x", "tmp"), false);
});

Deno.test("a Codex home under the temp directory gets svc's temp directory; elsewhere nothing changes", () => {
  const plan = (env: Record<string, string>, fixedTmpdir = false) =>
    codexHelperPlan(env, { fixedTmpdir, stateDir: STATE });
  assert.deepEqual(plan({ HOME: "/home/u" }), { kind: "fine" });
  assert.deepEqual(plan({ HOME: "/tmp/h", TMPDIR: "/tmp/h/tmp" }), { kind: "fine" });
  assert.deepEqual(plan({ HOME: "/tmp/h" }), {
    kind: "moved",
    codexHome: "/tmp/h/.codex",
    tempDir: "/tmp",
    tmpdir: `${STATE}/tmp`,
  });
  assert.equal(plan({ HOME: "/home/u", CODEX_HOME: "/var/t/c", TMPDIR: "/var/t" }).kind, "moved");
  assert.equal(plan({ HOME: "/home/u", TMPDIR: "" }).kind, "moved");
  const refused = plan({ HOME: "/tmp/h" }, true);
  assert.equal(refused.kind, "refused");
  assert.match(
    refused.kind === "refused" ? refused.reason : "",
    /CODEX_HOME \/tmp\/h\/\.codex lies under the temp directory \/tmp \(TMPDIR\).*the provider's env sets TMPDIR/,
  );
});

Deno.test("a Codex home under svc's own temp directory is refused, not moved into", () => {
  const plan = codexHelperPlan(
    { HOME: "/home/u", CODEX_HOME: `${STATE}/tmp/c`, TMPDIR: STATE },
    { fixedTmpdir: false, stateDir: STATE },
  );
  assert.equal(plan.kind, "refused");
});

Deno.test("the canonical CODEX_HOME is what is compared, as Codex canonicalises it", () => {
  const plan = codexHelperPlan({ CODEX_HOME: "/link/c", TMPDIR: "/tmp" }, {
    fixedTmpdir: false,
    stateDir: STATE,
    canonicalHome: "/tmp/real/c",
  });
  assert.equal(plan.kind, "moved");
});
