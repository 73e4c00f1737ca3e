/**
 * Bubblewrap binds only real paths: a directory a guest may read is resolved once, when its
 * sandbox is built, and a link on its way is never what the guest's mount names.
 */
import assert from "node:assert/strict";
import { confine, findBubblewrap } from "../src/isolation/mod.ts";
import { tempDir } from "./helpers.ts";

const probe = await findBubblewrap(Deno.execPath());
if (Deno.env.get("SVC_TEST_BWRAP") && !probe.ok) {
  throw new Error(`SVC_TEST_BWRAP is set, but bubblewrap cannot confine a guest: ${probe.reason}`);
}
const IGNORED = probe.ok ? "" : " (ignored: bubblewrap cannot run here)";

/** The host paths of the `--ro-bind` mounts of a bwrap argv. */
function binds(args: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  args.forEach((arg, i) => {
    if (arg === "--ro-bind") out.push([args[i + 1] ?? "", args[i + 2] ?? ""]);
  });
  return out;
}

Deno.test({
  name:
    `bubblewrap mounts the real path of a directory the guest reads, not the link that leads to it${IGNORED}`,
  ignore: !probe.ok,
  fn: async () => {
    await using dir = await tempDir("svc-bind-");
    const real = await Deno.realPath(dir.path);
    await Deno.mkdir(`${real}/target/files`, { recursive: true });
    await Deno.symlink(`${real}/target`, `${real}/link`);
    const plan = await confine({
      deno: Deno.execPath(),
      args: ["eval", "1"],
      env: {},
      readable: [`${real}/link/files`],
      dataDir: `${real}/data`,
    }, "on");
    assert.equal(plan.sandbox.kind, "bubblewrap");
    assert.deepEqual(binds(plan.args).filter(([from]) => from.startsWith(real)), [
      [`${real}/target/files`, `${real}/target/files`],
    ]);
    assert.ok(!plan.args.some((arg) => arg.includes(`${real}/link`)), plan.args.join(" "));
  },
});

Deno.test({
  name: `bubblewrap refuses to start a guest whose readable directory no longer resolves${IGNORED}`,
  ignore: !probe.ok,
  fn: async () => {
    await using dir = await tempDir("svc-bind-");
    await assert.rejects(
      confine({
        deno: Deno.execPath(),
        args: ["eval", "1"],
        env: {},
        readable: [`${dir.path}/gone`],
        dataDir: `${dir.path}/data`,
      }, "on"),
      /^SvcError: Cannot start the guest: a directory it must read no longer exists$/,
    );
  },
});
