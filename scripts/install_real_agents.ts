/**
 * Installs the four coding-agent command lines at the versions svc is tested with
 * (src/dispatch/harness/tested_versions.ts) into `.tools/agents`, from the npm registry, and
 * prints the directory of their binaries. CI runs it; so can anyone who wants the real-tool
 * suite locally: `deno task agents:install`, then `SVC_TEST_AGENTS=.tools/agents/node_modules/.bin`.
 * @module
 */
import { TESTED_VERSIONS } from "../src/dispatch/harness/tested_versions.ts";
import { runTask } from "./task_failure.ts";

const root = new URL("..", import.meta.url).pathname;
const prefix = `${root}.tools/agents`;

async function main(): Promise<void> {
  await Deno.mkdir(prefix, { recursive: true });
  const specs = Object.values(TESTED_VERSIONS).map((tool) => `${tool.package}@${tool.version}`);
  const install = await new Deno.Command("npm", {
    args: ["install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save", ...specs],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!install.success) {
    console.error(`Cannot install the coding agents: npm exited with code ${install.code}`);
    Deno.exit(1);
  }
  const bin = `${prefix}/node_modules/.bin`;
  for (const tool of Object.keys(TESTED_VERSIONS)) {
    try {
      await Deno.stat(`${bin}/${tool}`);
    } catch {
      console.error(
        `Cannot install the coding agents: ${bin}/${tool} is missing after npm install`,
      );
      Deno.exit(1);
    }
  }
  console.log(bin);
}

if (import.meta.main) await runTask("install the coding agents", main);
