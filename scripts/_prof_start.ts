import { openLedger } from "../src/ledger/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
const LOCAL = { owner: "local" } as never;
for (let r = 0; r < 4; r++) {
  const home = await Deno.makeTempDir();
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  const t0 = performance.now();
  console.error("---- t0", t0.toFixed(1));
  const started = await manager.start({
    script: `return await agent("hi");`,
    filename: "one.js",
    fake_dispatch: true,
    timeout: 60,
  }, LOCAL);
  const st = await manager.wait(started.run_id, LOCAL);
  console.error("end", (performance.now() - t0).toFixed(1), st.state);
  await manager.close();
  ledger.close();
  await Deno.remove(home, { recursive: true });
}
