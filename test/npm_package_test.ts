/**
 * The npm package, as a user gets it: `deno task build:npm`, `npm pack`, `npm install` of the
 * tarball into an empty folder, then Node (not Deno) runs the `svc` bin and the library API.
 */
import assert from "node:assert/strict";
import { ROOT, runCommand, tempDir } from "./helpers.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { PAGE_CSP } from "../src/http/mod.ts";
import { exchangeFrames, INITIALIZE } from "./mcp_helpers.ts";

const EXAMPLE = "node_modules/svc/examples/review_fanout.js";

/** The library API from a Node ES module: a workflow in process, and the dashboard serving it. */
const LIBRARY_SCRIPT = `
import { checkScript, openServices, platform, serveDashboard } from "svc";

const services = await openServices({ home: process.env.SVC_HOME });
const caller = { owner: "lib" };
const started = await services.runs.start({
  script: 'export const meta = { name: "lib" };\\nphase("ask");\\nreturn await parallel([1, 2].map((i) => () => agent("item " + i)));',
  fake_dispatch: true,
}, caller);
const status = await services.runs.wait(started.run_id, caller);
const token = "library-token-0123456789abcdef";
const dashboard = await serveDashboard(services, {
  port: 0,
  auth: { required: true, requireOwner: false, tokens: [{ token, owner: "lib" }], allowedOrigins: [] },
});
const headers = { authorization: "Bearer " + token };
const reply = await fetch(dashboard.url + "/api/workflow/" + started.run_id, { headers });
const denied = await fetch(dashboard.url + "/api/status");
const events = await (await fetch(dashboard.url + "/api/workflow/" + started.run_id + "/events", { headers })).text();
const body = await reply.json();
const page = await fetch(dashboard.url + "/");
const pageText = await page.text();
const app = await fetch(dashboard.url + "/app.js");
const served = {
  page: page.status,
  pageCsp: page.headers.get("content-security-policy"),
  pageLoadsApp: pageText.includes('src="/app.js"'),
  appType: app.headers.get("content-type"),
  appImports: (await app.text()).includes("./views/runs.js"),
  status: reply.status,
  owner: body.owner,
  state: body.state,
  denied: denied.status,
  endsSucceeded: events.trimEnd().endsWith('"state":"succeeded"}'),
  url: dashboard.url.replace(/:\\d+$/, ""),
};
await dashboard.close();
await services.close();
console.log(JSON.stringify({
  runtime: platform().runtime,
  state: status.state,
  name: status.name,
  result: status.result,
  phases: status.narration.filter((e) => e.kind === "phase").map((e) => e.text),
  checked: checkScript("return 1;").meta,
  served,
}));
`;

function assertNoStackTrace(stderr: string): void {
  assert.ok(!/\n\s+at .*\.(ts|js):\d+/.test(stderr), `stack trace on stderr:\n${stderr}`);
}

Deno.test("the npm package installs with npm and runs under Node: bin and library API", async (t) => {
  await using work = await tempDir("svc-npm-");
  const timings: string[] = [];
  const timed = async <T>(label: string, action: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    try {
      return await action();
    } finally {
      timings.push(`${label} ${Math.round(performance.now() - start)} ms`);
    }
  };
  const node = await runCommand("node", ["--version"]);
  assert.equal(node.code, 0, "node is on PATH");
  assert.ok(Number(/^v(\d+)/.exec(node.stdout)?.[1]) >= 20, `Node 20 or later: ${node.stdout}`);

  const install = `${work.path}/install`;
  const home = `${work.path}/home`;
  await Deno.mkdir(install);
  const env = { SVC_HOME: home, NO_COLOR: "1", npm_config_update_notifier: "false" };

  await t.step("deno task build:npm writes the package", async () => {
    const build = await timed("build", () => runCommand(Deno.execPath(), ["task", "build:npm"]));
    assert.equal(build.code, 0, build.stderr);
    const manifest = JSON.parse(await Deno.readTextFile(`${ROOT}/dist/npm/package.json`));
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
    assert.equal(manifest.bin.svc, "bin/svc.js");
    assert.equal(manifest.type, "module");
    assert.equal(
      manifest.dependencies.deno,
      (await Deno.readTextFile(`${ROOT}/.deno-version`)).trim(),
    );
    for (const [name, version] of Object.entries(manifest.dependencies)) {
      if (name === "deno") continue;
      assert.equal(config.imports[name], `npm:${name}@${version}`, `${name} as in deno.json`);
    }
    for (
      const file of [
        "index.js",
        "index.d.ts",
        "src/mod.d.ts",
        "guest/bootstrap.js",
        "bundled/svc-review.js",
      ]
    ) {
      assert.ok((await Deno.stat(`${ROOT}/dist/npm/${file}`)).isFile, file);
    }
  });

  let tarball = "";
  await t.step("npm pack and npm install of the tarball", async () => {
    const pack = await timed(
      "npm pack",
      () =>
        runCommand("npm", ["pack", `${ROOT}/dist/npm`, "--pack-destination", work.path], {
          env,
          cwd: work.path,
        }),
    );
    assert.equal(pack.code, 0, pack.stderr);
    tarball = `${work.path}/${pack.stdout.trim().split("\n").at(-1)}`;
    await Deno.writeTextFile(`${install}/package.json`, '{"private": true}\n');
    const installed = await timed("npm install", () =>
      runCommand(
        "npm",
        ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball],
        { env, cwd: install },
      ));
    assert.equal(installed.code, 0, installed.stderr);
    // docs/INSTALL.md: the one install script npm may warn about is the `deno` package's, which
    // links its platform package's binary into place.
    const warned = [
      ...installed.stderr.matchAll(/^npm warn install-scripts\s+(\S+)@\S+ \((\w+): (.*)\)$/gm),
    ];
    for (const [, name, hook, script] of warned) {
      assert.deepEqual([name, hook, script], ["deno", "postinstall", "node ./install.cjs"]);
    }
    const deno = JSON.parse(
      await Deno.readTextFile(`${install}/node_modules/deno/package.json`),
    );
    assert.deepEqual(deno.scripts, { postinstall: "node ./install.cjs" });
  });

  await t.step("installed without install scripts, svc still runs its guests on Deno", async () => {
    const bare = `${work.path}/no-scripts`;
    await Deno.mkdir(bare);
    await Deno.writeTextFile(`${bare}/package.json`, '{"private": true}\n');
    const installed = await runCommand(
      "npm",
      ["install", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts", tarball],
      { env, cwd: bare },
    );
    assert.equal(installed.code, 0, installed.stderr);
    await assert.rejects(Deno.stat(`${bare}/node_modules/deno/deno`), Deno.errors.NotFound);
    const run = await runCommand("npx", ["svc", "workflow", "run", EXAMPLE, "--fake-dispatch"], {
      env: { ...env, SVC_HOME: `${work.path}/home-no-scripts` },
      cwd: bare,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).verdicts.length, 3);
  });

  await t.step("npx svc --help lists the commands", async () => {
    const help = await timed(
      "npx svc --help",
      () => runCommand("npx", ["svc", "--help"], { env, cwd: install }),
    );
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: svc /m);
    assert.match(help.stdout, /workflow/);
  });

  await t.step(
    "npx svc workflow run --fake-dispatch prints the product; guests run on Deno",
    async () => {
      const run = await timed(
        "npx svc workflow run",
        () =>
          runCommand("npx", ["svc", "workflow", "run", EXAMPLE, "--fake-dispatch"], {
            env,
            cwd: install,
          }),
      );
      assert.equal(run.code, 0, run.stderr);
      const product = JSON.parse(run.stdout);
      assert.equal(product.files.length, 3);
      assert.equal(product.verdicts.length, 3);
      assert.match(run.stderr, /svc: run run_\w+ succeeded/);
      assert.deepEqual([...Deno.readDirSync(`${home}/tmp`)], [], "guest scratch removed");
      // The ledger the Node run wrote (through @deno/kv) reads back from Deno.
      const runId = /svc: run (run_\w+) succeeded/.exec(run.stderr)![1]!;
      const ledger = await openLedger(home);
      try {
        const status = await ledger.getRun(runId);
        assert.equal(status?.state, "succeeded");
        assert.deepEqual(status?.result, product);
        assert.deepEqual(status?.narration.filter((e) => e.kind === "phase").map((e) => e.text), [
          "review",
          "summarise",
        ]);
        const journal = await ledger.getJournal(runId);
        assert.equal(journal.length, 9);
        assert.ok(journal.every((e) => e.outcome === "live" && e.provider === "fake"));
      } finally {
        ledger.close();
      }
    },
  );

  await t.step(
    "npx svc dispatch hands the task to a detached Node worker that finishes it",
    async () => {
      const queued = await runCommand("npx", ["svc", "dispatch", "from node", "--fake-dispatch"], {
        env,
        cwd: install,
      });
      assert.equal(queued.code, 0, queued.stderr);
      const { task_id } = JSON.parse(queued.stdout);
      let state = "queued";
      let result: unknown;
      for (let i = 0; i < 100 && state !== "succeeded"; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const shown = await runCommand("npx", ["svc", "task", "status", task_id], {
          env,
          cwd: install,
        });
        assert.equal(shown.code, 0, shown.stderr);
        ({ state, result } = JSON.parse(shown.stdout));
      }
      assert.equal(state, "succeeded");
      assert.equal(result, "fake response to: from node");
    },
  );

  await t.step("npx svc mcp serves the tools over stdio under Node", async () => {
    const npx = await runCommand("bash", ["-c", "command -v npx"]);
    const served = await exchangeFrames(npx.stdout.trim(), ["svc", "mcp"], {
      env: { ...Deno.env.toObject(), ...env },
      cwd: install,
      frames: [
        INITIALIZE,
        { jsonrpc: "2.0", method: "notifications/initialized" },
        {
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "svc_board_write", arguments: { action: "new", title: "From Node" } },
        },
      ],
    });
    assert.equal(served.code, 0, served.stderr);
    // deno-lint-ignore no-explicit-any -- frames are checked field by field
    const [opened, called] = served.answers as any[];
    assert.equal(opened.result.serverInfo.name, "svc");
    assert.equal(called.result.structuredContent.card.title, "From Node");
  });

  await t.step("the npm README's library example runs as written", async () => {
    const readme = await Deno.readTextFile(`${ROOT}/npm/README.md`);
    const example = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(example, "the npm README shows a library example");
    await Deno.writeTextFile(`${install}/readme_example.mjs`, example);
    const ran = await runCommand("node", ["readme_example.mjs"], { env, cwd: install });
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout.trim(), "succeeded fake response to: hello");
  });

  await t.step("a failing run and bad input behave as under Deno", async () => {
    await Deno.writeTextFile(`${install}/throws.js`, 'throw new Error("boom");\n');
    const failed = await runCommand("npx", ["svc", "workflow", "run", "throws.js"], {
      env,
      cwd: install,
    });
    assert.equal(failed.code, 1);
    assert.equal(failed.stdout, "");
    assert.match(failed.stderr, /failed: Error: boom \(throws\.js:1:7\)/);
    const missing = await runCommand("npx", ["svc", "workflow", "run", "nope.js"], {
      env,
      cwd: install,
    });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^svc: Cannot read script 'nope\.js': no such file$/m);
    assertNoStackTrace(missing.stderr + failed.stderr);
  });

  await t.step(
    "the library API runs a workflow in process and serves the dashboard under Node",
    async () => {
      await Deno.writeTextFile(`${install}/library.mjs`, LIBRARY_SCRIPT);
      const lib = await timed(
        "node library.mjs",
        () => runCommand("node", ["library.mjs"], { env, cwd: install }),
      );
      assert.equal(lib.code, 0, lib.stderr);
      const out = JSON.parse(lib.stdout);
      assert.match(out.runtime, /^node 2\d|^node \d{2,}/);
      assert.equal(out.state, "succeeded");
      assert.equal(out.name, "lib");
      assert.deepEqual(out.result, ["fake response to: item 1", "fake response to: item 2"]);
      assert.deepEqual(out.phases, ["ask"]);
      assert.deepEqual(out.checked, {});
      assert.deepEqual(out.served, {
        page: 200,
        pageCsp: PAGE_CSP,
        pageLoadsApp: true,
        appType: "text/javascript; charset=utf-8",
        appImports: true,
        status: 200,
        owner: "lib",
        state: "succeeded",
        denied: 401,
        endsSucceeded: true,
        url: "http://127.0.0.1",
      });
    },
  );

  console.log(`npm package test timings: ${timings.join(", ")}`);
});
