import { openLedger } from "../src/ledger/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
const home = await Deno.makeTempDir();
const ledger = await openLedger(home);
const manager = await RunManager.create({
  dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  ledger,
});
const LOCAL = { owner: "local" } as never;
const script = Deno.env.get("FANOUT")
  ? `const results = await parallel(Array.from({ length: 200 }, (_, i) => () => agent("task " + i)));\nreturn results.length;\n`
  : Deno.env.get("NOCALL")
  ? `const values = [];\nfor (let i = 0; i < 200; i++) values.push("step " + i);\nreturn values;\n`
  : `const values = [];\nfor (let i = 0; i < 200; i++) values.push(await agent("step " + i));\nreturn values;\n`;
`const values = [];\nfor (let i = 0; i < 200; i++) values.push(await agent("step " + i));\nreturn values;\n`;
const mode = Deno.args[0] ?? "chain";
let src: string | undefined;
const G = globalThis as Record<string, unknown>;
G.__commit = [];
G.__guest = [];
G.__host = [];
for (let r = 0; r < Number(Deno.env.get("RUNS") ?? 8); r++) {
  const c0 = (await import("node:process")).cpuUsage();
  const t0 = performance.now();
  const started = await manager.start({
    script,
    filename: "chain.js",
    fake_dispatch: true,
    timeout: 60,
    ...(mode === "resume" && src ? { resume_from: src } : {}),
  }, LOCAL);
  if (!Deno.env.get("NOFOLLOW")) {
    for await (const _ of manager.events(started.run_id, LOCAL)) {
      /* */
    }
  }
  const st = await manager.wait(started.run_id, LOCAL);
  if (!src) src = st.run_id;
  for (const n of st.narration) if (n.text.includes("TG")) console.log(n.text);
  const c1 = (await import("node:process")).cpuUsage(c0);
  console.log(
    r,
    st.state,
    (performance.now() - t0).toFixed(1),
    st.journal.replayed,
    "cpu",
    ((c1.user + c1.system) / 1000).toFixed(1),
  );
}
const med = (k: string) => {
  const v = (G[k] as number[]).sort((a, b) => a - b);
  return v[v.length >> 1]?.toFixed(3) + " (n=" + v.length + ")";
};
console.log(
  "commit",
  med("__commit"),
  "host(req->reply)",
  med("__host"),
  "guest(reply->next req)",
  med("__guest"),
);
await manager.close();
ledger.close();
await Deno.remove(home, { recursive: true });
