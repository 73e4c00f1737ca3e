import { openLedger } from "/work/main/src/ledger/mod.ts";
import { RunManager } from "/work/main/src/engine/mod.ts";
import { createDispatcher } from "/work/main/src/dispatch/mod.ts";
const home = await Deno.makeTempDir();
const ledger = await openLedger(home);
const manager = await RunManager.create({
  dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  ledger,
});
const LOCAL = { owner: "local" } as never;
const script =
  `const values = [];\nfor (let i = 0; i < 200; i++) values.push(await agent("step " + i));\nreturn values;\n`;
const started = await manager.start({
  script,
  filename: "chain.js",
  fake_dispatch: true,
  timeout: 60,
}, LOCAL);
const types: Record<string, number> = {};
for await (const { event } of manager.events(started.run_id, LOCAL)) {
  types[event.type] = (types[event.type] ?? 0) + 1;
}
console.log(types);
await manager.close();
ledger.close();
await Deno.remove(home, { recursive: true });
