/**
 * `deno task agents:outdated` against a local stand-in of the npm registry: it reads each tool's
 * package document (the abbreviated format npm itself asks for), lists the releases newer than
 * the tested versions, leaves pre-releases out, and its exit status says whether a bump is due.
 */
import assert from "node:assert/strict";
import { TESTED_VERSIONS } from "../src/dispatch/harness/tested_versions.ts";
import { ROOT, runCommand } from "./helpers.ts";

/** Versions after `version`: its next patch, a pre-release and the next minor. */
function bumped(version: string): string[] {
  const [major, minor, patch] = version.split(".").map(Number) as [number, number, number];
  return [
    `${major}.${minor}.${patch + 1}`,
    `${major}.${minor + 1}.0-beta.1`,
    `${major}.${minor + 1}.0`,
  ];
}

/**
 * A stand-in of the registry: `GET /<package>` answers a package document whose versions are
 * the tested one and older, plus `extra(package)`; unknown packages get npm's 404.
 */
function registry(extra: (pkg: string) => string[]) {
  const paths: string[] = [];
  const accepts: string[] = [];
  const packages = new Set(Object.values(TESTED_VERSIONS).map((tool) => tool.package));
  const tested = new Map(Object.values(TESTED_VERSIONS).map((t) => [t.package, t.version]));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const path = new URL(request.url).pathname;
    paths.push(path);
    accepts.push(request.headers.get("accept") ?? "");
    const pkg = decodeURIComponent(path.slice(1));
    if (!packages.has(pkg)) return Response.json({ error: "Not found" }, { status: 404 });
    const all = ["0.0.1", tested.get(pkg)!, ...extra(pkg)];
    const latest = all.filter((v) => !v.includes("-")).at(-1)!;
    return Response.json({
      name: pkg,
      "dist-tags": { latest },
      modified: "2026-12-01T00:00:00.000Z",
      versions: Object.fromEntries(all.map((version) => [version, {
        name: pkg,
        version,
        dist: { tarball: `http://127.0.0.1/${pkg}/-/${version}.tgz` },
      }])),
    }, { headers: { "content-type": "application/vnd.npm.install-v1+json" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    paths,
    accepts,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function outdated(args: string[]) {
  return runCommand(Deno.execPath(), ["task", "--quiet", "agents:outdated", ...args], {
    cwd: ROOT,
    env: { NO_COLOR: "1" },
  });
}

Deno.test("agents:outdated lists the releases newer than the tested versions and exits 1", async () => {
  const newer = Object.values(TESTED_VERSIONS)[0]!.package;
  await using reg = registry((pkg) => pkg === newer ? bumped(TESTED_VERSIONS.claude.version) : []);
  const result = await outdated(["--registry", reg.url]);
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stdout.trim().split("\n");
  assert.equal(lines.length, 4, result.stdout);
  const [major, minor, patch] = TESTED_VERSIONS.claude.version.split(".").map(Number);
  assert.match(
    lines[0]!,
    new RegExp(
      `^claude\\s+${TESTED_VERSIONS.claude.version}\\s+newer: ${major}\\.${minor}\\.${
        patch! + 1
      }, ${major}\\.${minor! + 1}\\.0$`,
    ),
  );
  for (const [i, tool] of (["codex", "gemini", "opencode"] as const).entries()) {
    assert.match(
      lines[i + 1]!,
      new RegExp(`^${tool}\\s+${TESTED_VERSIONS[tool].version}\\s+current$`),
    );
  }
  // A scoped name keeps its @ and encodes its slash, as npm asks for it.
  assert.ok(reg.paths.includes("/@anthropic-ai%2Fclaude-code"), reg.paths.join(" "));
  assert.ok(reg.accepts.every((accept) => accept.includes("application/vnd.npm.install-v1+json")));
  assert.equal(result.stderr, "");
});

Deno.test("agents:outdated says current for every tool and exits 0 when none is newer", async () => {
  await using reg = registry(() => ["0.0.2-rc.1"]);
  const result = await outdated([`--registry=${reg.url}/`]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.match(/current$/gm)?.length, 4, result.stdout);
});

Deno.test("agents:outdated names the package and the registry's answer when it cannot read one, exit 2", async () => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ error: "Not found" }, { status: 404 }),
  );
  try {
    const url = `http://127.0.0.1:${server.addr.port}`;
    const result = await outdated(["--registry", url]);
    assert.equal(result.code, 2);
    assert.equal(
      result.stderr.trim(),
      `Cannot read ${TESTED_VERSIONS.claude.package} from ${url}: it answered HTTP 404`,
    );
    assert.doesNotMatch(result.stderr, /^\s+at /m);
  } finally {
    await server.shutdown();
  }
  const bad = await outdated(["--registry", "file:///etc"]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr.trim(),
    /^Cannot list newer releases: the registry file:\/\/\/etc is not http or https$/,
  );
});
