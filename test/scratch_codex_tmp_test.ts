import { codexProvider } from "../src/dispatch/mod.ts";
import { type Responder, startModelStandIn } from "./model_standin/mod.ts";
import { harnessRequest } from "./harness_helpers.ts";
import { agentHome, realToolTest } from "./real_agents.ts";

const SHELL: Responder = (request) => {
  if (request.toolResults.length > 0) {
    return { text: `ran: ${request.toolResults.map((result) => result.content).join("\n")}` };
  }
  return { toolCalls: [{ name: "exec_command", input: { cmd: "cat note.txt" } }] };
};

realToolTest("codex", "scratch", async (bin) => {
  const standin = startModelStandIn(SHELL);
  const home = await agentHome();
  await Deno.writeTextFile(`${home.work}/note.txt`, "the note\n");
  const provider = codexProvider({
    command: bin,
    baseUrl: `${standin.url}/v1`,
    env: { HOME: home.home, CODEX_API_KEY: "k" },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
  });
  try {
    const r = await provider.dispatch(harnessRequest("go", { cwd: home.work, model: "gpt-5-codex", sandbox: "read-only" }));
    console.log("RESULT", r.output);
  } catch (e) {
    console.log("ERROR", String(e));
  }
  await Deno.remove(home.home+"/.codex/config.toml").catch(()=>{});
  console.log((await new Deno.Command("find", {args:[home.home+"/.codex", "-maxdepth", "3"]}).output()).stdout.length);
  console.log(new TextDecoder().decode((await new Deno.Command("find", {args:[home.home+"/.codex", "-maxdepth", "3"]}).output()).stdout));
  await standin.close();
  await home[Symbol.asyncDispose]();
});
