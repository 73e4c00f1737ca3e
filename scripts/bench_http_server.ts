/**
 * A server for the HTTP benchmark, in a process of its own: `bare` answers every request with
 * a hello-world (the baseline), `dashboard` serves the dashboard over fresh services in
 * `SVC_HOME` with one token. Prints its port on standard output, then serves until killed.
 * @module
 */
import { createDispatcher } from "../src/dispatch/mod.ts";
import { serveDashboard } from "../src/http/mod.ts";
import { openServices } from "../src/services/mod.ts";

/** The token the benchmark sends. */
export const BENCH_TOKEN = "bench-token-0123456789abcdef";

async function main(mode: string | undefined): Promise<void> {
  if (mode === "bare") {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("hello"),
    );
    console.log(server.addr.port);
    await server.finished;
    return;
  }
  const services = await openServices({
    home: Deno.env.get("SVC_HOME")!,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  const server = await serveDashboard(services, {
    port: 0,
    auth: {
      required: true,
      requireOwner: false,
      tokens: [{ token: BENCH_TOKEN, owner: "bench" }],
      allowedOrigins: [],
    },
  });
  console.log(new URL(server.url).port);
  await new Promise(() => {});
}

if (import.meta.main) await main(Deno.args[0]);
