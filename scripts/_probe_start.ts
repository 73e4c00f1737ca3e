import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
const home = await Deno.makeTempDir();
const ledger = await openLedger(home);
const manager = await RunManager.create({
  dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  ledger,
  projectDir: home,
  prestartGuest: Deno.env.get("PRESTART") === "1",
});
const LOCAL = { owner: "local" };
const firsts: number[] = [], ends: number[] = [], totals: number[] = [];
for (let i = 0; i < 12; i++) {
  await new Promise((r) => setTimeout(r, 100));
  const t0 = performance.now();
  let tFirst = 0, tLast = 0;
  const run = await manager.start({ script: `return await agent("hello");` }, LOCAL);
  const done = (async () => {
    for await (const e of manager.events(run.run_id, LOCAL)) {
      if (e.event.type === "call" && !tFirst) tFirst = performance.now();
      if (e.event.type === "state" && e.event.state === "succeeded") tLast = performance.now();
    }
  })();
  await manager.wait(run.run_id, LOCAL);
  const t2 = performance.now();
  await done;
  if (i >= 2) {
    firsts.push(tFirst - t0);
    ends.push(tLast - tFirst);
    totals.push(t2 - t0);
  }
}
const med = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!.toFixed(1);
console.log("first call", med(firsts), "first->end", med(ends), "total", med(totals));
await manager.close();
ledger.close();
