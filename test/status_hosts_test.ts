/**
 * The hosts of `/api/status`: the dashboard answering is alive (it is answering), a recently
 * dead host is listed as dead, and one dead for longer than `HOST_FORGET_MS` leaves the list and
 * the ledger. Over the real KV ledger, with records written as another process would.
 */
import assert from "node:assert/strict";
import { HOST_FORGET_MS } from "../src/ledger/mod.ts";
import { STATUS_HOSTS_TTL_MS } from "../src/services/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";

type Host = { host_id: string; alive: boolean; heartbeat_at: string };

/** Writes host records beside the ledger's own, as hosts that beat at `ago` ms before now. */
async function writeHosts(
  home: string,
  hosts: Array<{ id: string; agoMs: number }>,
): Promise<void> {
  const kv = await Deno.openKv(`${home}/svc.kv`);
  try {
    // The key of a record the ledger itself wrote: the others go beside it.
    let sample: Deno.KvKey | undefined;
    for await (const entry of kv.list({ prefix: [] })) {
      const value = entry.value instanceof Uint8Array ? new TextDecoder().decode(entry.value) : "";
      if (value.includes('"heartbeat_at"')) sample = entry.key;
    }
    assert.ok(sample, "the ledger holds a host record");
    for (const host of hosts) {
      const at = new Date(Date.now() - host.agoMs).toISOString();
      const doc = { pid: 2 ** 22 + 17, started_at: at, heartbeat_at: at };
      await kv.set(
        [...sample.slice(0, -1), host.id],
        new TextEncoder().encode(JSON.stringify(doc)),
      );
    }
  } finally {
    kv.close();
  }
}

Deno.test("/api/status lists the answering dashboard as alive, a host dead for minutes as dead, and forgets one dead past the window", async () => {
  await using d = await startDashboard();
  // The dashboard has no work: it holds no heartbeat, and is alive all the same.
  const idle = await d.json("/api/status", { token: TOKENS.alice });
  const self = (idle.body.host as { id: string }).id;
  const first = (idle.body.hosts as Host[])[0];
  assert.equal(first?.host_id, self);
  assert.equal(first?.alive, true);

  // Its own record grown stale (as after its last run), a host dead for a minute, one dead
  // past the window.
  await d.services.host.beat();
  await writeHosts(d.home, [
    { id: self, agoMs: 5 * 60_000 },
    { id: "host_recent_dead", agoMs: 60_000 },
    { id: "host_long_dead", agoMs: HOST_FORGET_MS + 60_000 },
  ]);
  // The status reads the hosts at most once in its freshness window: the next read is after it.
  await new Promise((resolve) => setTimeout(resolve, STATUS_HOSTS_TTL_MS));
  const status = await d.json("/api/status", { token: TOKENS.alice });
  const hosts = status.body.hosts as Host[];
  assert.deepEqual(hosts.map((h) => h.host_id), [self, "host_recent_dead"]);
  assert.equal(hosts[0]!.alive, true);
  assert.equal(hosts[1]!.alive, false);
  // Forgotten in the ledger too, not only hidden.
  const listed = await d.services.ledger.listHosts();
  assert.ok(!listed.some((h) => h.host_id === "host_long_dead"));
  const kv = await Deno.openKv(`${d.home}/svc.kv`);
  try {
    for await (const entry of kv.list({ prefix: [] })) {
      assert.ok(!entry.key.includes("host_long_dead"), JSON.stringify(entry.key));
    }
  } finally {
    kv.close();
  }
});

Deno.test("/api/status reads the hosts once per freshness window, for every owner alike", async () => {
  await using d = await startDashboard();
  await d.services.host.beat();
  const ids = async (token: string) =>
    ((await d.json("/api/status", { token })).body.hosts as Host[]).map((h) => h.host_id);
  const self = (await ids(TOKENS.alice))[0]!;
  const read = performance.now();
  await writeHosts(d.home, [{ id: "host_new", agoMs: 0 }]);
  const within = await ids(TOKENS.bob);
  // Only while the window lasts: a slow machine may have passed it already.
  if (performance.now() - read < STATUS_HOSTS_TTL_MS * 0.8) assert.deepEqual(within, [self]);
  await new Promise((resolve) => setTimeout(resolve, STATUS_HOSTS_TTL_MS));
  assert.deepEqual((await ids(TOKENS.alice)).sort(), [self, "host_new"].sort());
});
