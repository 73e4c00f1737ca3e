import assert from "node:assert/strict";
import { ROOT, svcCommand, tempDir } from "./helpers.ts";

const API_DOC = await Deno.readTextFile(`${ROOT}/docs/API.md`);

/** The `sh` block of docs/API.md's curl examples. */
function curlExamples(): string {
  const block = /## Examples[\s\S]*?```sh\n([\s\S]*?)```/.exec(API_DOC)?.[1];
  assert.ok(block, "docs/API.md shows curl examples");
  return block;
}

/** Lines a start prints before the ready-to-open URL: at most a few. */
const URL_WITHIN_LINES = 3;

/** What a fresh clone does not have, or the dashboard does not need. */
const NOT_COPIED = new Set([".git", "node_modules", "test-artifacts", ".tools", "dist", "test"]);

/** The index of the first line holding the ready-to-open URL `url`. */
function urlLine(lines: string[], url: string): number {
  return lines.findIndex((l) => l.startsWith(`svc: open ${url}`));
}

/** A command of `svc dashboard --port 0`: through the launcher as `deno task dashboard` runs it. */
function dashboardCommand(options: Deno.CommandOptions & { args: string[] }): Deno.Command {
  return svcCommand({ ...options, args: ["dashboard", ...options.args] });
}

/** Starts `svc dashboard --port 0` as `deno task dashboard` does; resolves once it listens. */
async function startCli(
  home: string,
  env: Record<string, string> = {},
  command: typeof dashboardCommand = dashboardCommand,
) {
  const child = command({
    args: ["--port", "0"],
    env: {
      HOME: home,
      SVC_HOME: `${home}/.svc`,
      NO_COLOR: "1",
      PATH: Deno.env.get("PATH") ?? "",
      ...env,
    },
    clearEnv: true,
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let url: string | undefined;
  while (url === undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    lines.push(...parts);
    url = lines.map((l) => /dashboard on (http:\/\/\S+)/.exec(l)?.[1]).find(Boolean);
  }
  assert.ok(url, lines.join("\n"));
  // Give the lines printed right after the address a moment to arrive.
  const rest = (async () => {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    }
  })();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream());
  const out = (async () => {
    let text = "";
    for await (const chunk of stdout) text += chunk;
    return text;
  })();
  return {
    url,
    lines,
    async stop(): Promise<{ code: number; stdout: string }> {
      child.kill("SIGTERM");
      const status = await child.status;
      await rest;
      return { code: status.code, stdout: await out };
    },
  };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
}

Deno.test("svc dashboard on a fresh SVC_HOME makes a token once, prints its URL on every start, and docs/API.md's curl examples work against it", async () => {
  await using home = await tempDir("svc-dash-cli-");
  const server = await startCli(home.path);
  await until(() => server.lines.some((l) => l.includes("/api/status")));
  const tokenFile = `${home.path}/.svc/dashboard.token`;
  const token = (await Deno.readTextFile(tokenFile)).trim();
  assert.equal((await Deno.stat(tokenFile)).mode! & 0o777, 0o600);
  // A quiet start: the URL, token in the fragment, within the first few lines of all.
  const first = urlLine(server.lines, `${server.url}/#token=${token}`);
  assert.ok(first >= 0 && first < URL_WITHIN_LINES, server.lines.join("\n"));
  assert.equal(
    server.lines.filter((l) => l.includes(token)).length,
    2,
    "printed in its URL and a curl line",
  );
  assert.ok(server.lines.some((l) => l.includes(`one was made and saved in ${tokenFile}`)));

  const script = curlExamples().replaceAll("http://127.0.0.1:41521", server.url);
  const shell = await new Deno.Command("bash", {
    args: ["-euo", "pipefail", "-c", script],
    env: { HOME: home.path, PATH: Deno.env.get("PATH") ?? "" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const output = new TextDecoder().decode(shell.stdout);
  assert.equal(shell.code, 0, new TextDecoder().decode(shell.stderr));
  assert.match(output, /"service":"svc"/);
  assert.match(output, /event: narration\n/);
  assert.match(output, /"state":"succeeded"/);
  assert.match(output, /"task_id":"task_/);
  assert.match(output, /"runs":\[\{"run_id":"run_/);
  assert.match(output, /"by_provider"/);
  assert.doesNotMatch(output, /"error"/);

  const stopped = await server.stop();
  assert.equal(stopped.code, 0);
  assert.equal(stopped.stdout, "", "nothing on stdout");
  assert.ok(server.lines.some((l) => l.includes("stopping the dashboard")));

  // A second start reads the saved token and prints the same ready-to-open URL, as early.
  const again = await startCli(home.path);
  await until(() => again.lines.some((l) => l.includes("dashboard.token")));
  const second = urlLine(again.lines, `${again.url}/#token=${token}`);
  assert.ok(second >= 0 && second < URL_WITHIN_LINES, again.lines.join("\n"));
  assert.ok(again.lines.some((l) => l === `svc: the API token is in ${tokenFile}`));
  assert.equal(again.lines.filter((l) => l.includes(token)).length, 1, "the URL only");
  const status = await fetch(`${again.url}/api/status`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(status.status, 200);
  await status.body?.cancel();
  assert.equal((await again.stop()).code, 0);
  assert.equal(await Deno.readTextFile(tokenFile), `${token}\n`, "the token is kept");
});

Deno.test("svc dashboard never prints a token the operator configured: its URL comes without it", async () => {
  await using home = await tempDir("svc-dash-cli-");
  const token = "configured-token-0123456789abcdef";
  const server = await startCli(home.path, { SVC_DASHBOARD_API_TOKEN: token });
  await until(() => server.lines.some((l) => l.includes("/mcp")));
  const at = urlLine(server.lines, `${server.url}/ `);
  assert.ok(at >= 0 && at < URL_WITHIN_LINES, server.lines.join("\n"));
  assert.ok(!server.lines.some((l) => l.includes(token)), server.lines.join("\n"));
  assert.ok(!server.lines.some((l) => l.includes("#token=")), server.lines.join("\n"));
  const status = await fetch(`${server.url}/api/status`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(status.status, 200);
  await status.body?.cancel();
  assert.equal((await server.stop()).code, 0);
  await assert.rejects(Deno.stat(`${home.path}/.svc/dashboard.token`), Deno.errors.NotFound);
});

Deno.test("svc dashboard with authentication off says so, and acts as the local owner", async () => {
  await using home = await tempDir("svc-dash-cli-");
  const server = await startCli(home.path, { SVC_DASHBOARD_AUTH_REQUIRED: "false" });
  await until(() => server.lines.some((l) => l.includes("authentication is off")));
  assert.ok(server.lines.some((l) => l.includes("authentication is off")), server.lines.join("\n"));
  const response = await fetch(`${server.url}/api/status`);
  assert.equal(response.status, 200);
  assert.deepEqual((await response.json()).caller, { owner: "local" });
  assert.equal((await server.stop()).code, 0);
});

Deno.test("the README's dashboard command, run as written in a fresh checkout, prints the ready-to-open URL within a few lines", async () => {
  const readme = await Deno.readTextFile(`${ROOT}/README.md`);
  const pinned = (await Deno.readTextFile(`${ROOT}/.deno-version`)).trim();
  const shown = /```sh\n(npx -y deno@\S+ task dashboard)\n/.exec(readme)?.[1];
  assert.equal(shown, `npx -y deno@${pinned} task dashboard`);
  await using home = await tempDir("svc-dash-cli-");
  // A checkout with no node_modules, as a fresh clone is. Deno's own cache is kept (nothing is
  // downloaded again); setting up node_modules from it is what printed a line per package.
  await using checkout = await tempDir("svc-dash-checkout-");
  for await (const entry of Deno.readDir(ROOT)) {
    if (NOT_COPIED.has(entry.name)) continue;
    const copied = await new Deno.Command("cp", {
      args: ["-a", `${ROOT}/${entry.name}`, checkout.path],
    }).output();
    assert.equal(copied.code, 0, new TextDecoder().decode(copied.stderr));
  }
  // The same task with this Deno (the pinned one npx would fetch).
  const task = (options: Deno.CommandOptions & { args: string[] }) =>
    new Deno.Command(Deno.execPath(), {
      ...options,
      cwd: checkout.path,
      args: ["task", "dashboard", ...options.args],
    });
  const denoDir = Deno.env.get("DENO_DIR") || `${Deno.env.get("HOME")}/.cache/deno`;
  const server = await startCli(home.path, { DENO_DIR: denoDir }, task);
  await until(() => server.lines.some((l) => l.includes("/api/status")));
  const at = urlLine(server.lines, `${server.url}/#token=`);
  assert.ok(at >= 0 && at < URL_WITHIN_LINES, server.lines.slice(0, 20).join("\n"));
  assert.equal((await server.stop()).code, 0);
});
