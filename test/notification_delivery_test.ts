/**
 * Outbound delivery of notifications: the daemon POSTs each to the operator's endpoints, signed
 * as Standard Webhooks, retried with backoff after a failure, every attempt recorded in the
 * ledger; one daemon of several delivers; a dead endpoint never holds up a run.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { NOTIFICATION_LEASE, NotificationDeliverer, verifyStandard } from "../src/daemon/mod.ts";
import { type Ledger, openLedger } from "../src/ledger/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { LOCAL, tempDir } from "./helpers.ts";
import { configOf, eventually, startTestDaemon, type TestDaemon } from "./daemon_helpers.ts";

const SECRET = `whsec_${btoa("a secret of thirty-two bytes!!!!")}`;
const ENV = { NOTIFY_SECRET: SECRET };

interface Seen {
  path: string;
  headers: Headers;
  body: Uint8Array;
}

/** A receiver on 127.0.0.1 that records every request and answers as `answer` says. */
function receiver(answer: (seen: Seen, count: number) => Response) {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const entry = {
      path: new URL(req.url).pathname,
      headers: req.headers,
      body: new Uint8Array(await req.arrayBuffer()),
    };
    seen.push(entry);
    return answer(entry, seen.length);
  });
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}`,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

function notifyConfig(endpoints: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return configOf({ notifications: { endpoints, first_retry_s: 0.05, ...extra } });
}

async function failRun(d: TestDaemon): Promise<string> {
  const run = await d.services.runs.start({
    script: `throw new Error("boom")`,
    fake_dispatch: true,
  }, LOCAL);
  const ended = await d.services.runs.wait(run.run_id, LOCAL);
  assert.equal(ended.state, "failed");
  return run.run_id;
}

/** An HMAC check written out here, apart from svc's own code. */
async function independentlyValid(seen: Seen): Promise<boolean> {
  const id = seen.headers.get("webhook-id")!;
  const timestamp = seen.headers.get("webhook-timestamp")!;
  const key = await crypto.subtle.importKey(
    "raw",
    Uint8Array.from(atob(SECRET.slice(6)), (c) => c.charCodeAt(0)),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signed = new Uint8Array([
    ...new TextEncoder().encode(`${id}.${timestamp}.`),
    ...seen.body,
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signed));
  return seen.headers.get("webhook-signature") === `v1,${btoa(String.fromCharCode(...mac))}`;
}

Deno.test("a failed run's notification reaches a local receiver signed, retried after a 500, every attempt recorded", async () => {
  await using home = await tempDir("svc-deliver-");
  await using r = receiver((_, count) => new Response(null, { status: count === 1 ? 500 : 204 }));
  await using d = await startTestDaemon(home.path, {
    config: notifyConfig({
      ops: { url: `${r.url}/hook`, secret_env: "NOTIFY_SECRET" },
      // Bob's only: the local owner's notification is not sent here.
      bobs: { url: `${r.url}/bob`, secret_env: "NOTIFY_SECRET", owners: ["bob"] },
    }),
    env: ENV,
  });
  const runId = await failRun(d);
  const [note] = (await d.services.notifications.list(LOCAL)).items;
  assert.ok(note);
  const delivered = await eventually(async () => {
    const [delivery] = await d.services.ledger.listNotificationDeliveries("local", note.seq);
    return delivery?.status === "delivered" ? delivery : undefined;
  }, { what: "the delivery" });
  assert.equal(delivered.attempts, 2);
  assert.equal(delivered.last_status, 204);
  assert.equal(delivered.endpoint, "ops");
  assert.equal(r.seen.length, 2);
  for (const seen of r.seen) {
    assert.equal(seen.path, "/hook");
    assert.equal(seen.headers.get("webhook-id"), note.id);
    assert.ok(await independentlyValid(seen));
    const verified = await verifyStandard(seen.headers, seen.body, {
      secret: SECRET,
      toleranceS: 300,
    });
    assert.ok(verified.ok);
    const payload = JSON.parse(new TextDecoder().decode(seen.body));
    assert.equal(payload.type, "notification.failed");
    assert.equal(payload.data.run_id, runId);
    assert.equal(payload.data.id, note.id);
  }
  const health = await d.daemon.health();
  assert.equal(health.notifications.mode, "leader");
  assert.equal(health.notifications.delivered, 1);
  assert.equal(health.notifications.attempts, 2);
  // Delivered everywhere it was due: out of the outbox.
  await eventually(async () =>
    (await d.services.ledger.listNotificationOutbox(10)).length === 0 ? true : undefined
  );
});

Deno.test("a delivery is given up after max_attempts, and a redirect is not followed", async () => {
  await using home = await tempDir("svc-deliver-give-up-");
  await using r = receiver((seen) =>
    seen.path === "/moved"
      ? new Response(null, { status: 302, headers: { location: "/elsewhere" } })
      : new Response("no", { status: 500 })
  );
  await using d = await startTestDaemon(home.path, {
    config: notifyConfig({
      down: { url: `${r.url}/down`, secret_env: "NOTIFY_SECRET" },
      moved: { url: `${r.url}/moved`, secret_env: "NOTIFY_SECRET" },
    }, { max_attempts: 3 }),
    env: ENV,
  });
  await failRun(d);
  const [note] = (await d.services.notifications.list(LOCAL)).items;
  const ended = await eventually(async () => {
    const all = await d.services.ledger.listNotificationDeliveries("local", note!.seq);
    return all.length === 2 && all.every((x) => x.status === "failed") ? all : undefined;
  }, { what: "both deliveries to give up" });
  for (const delivery of ended) {
    assert.equal(delivery.attempts, 3);
    assert.match(delivery.last_error ?? "", /HTTP (500|302)/);
  }
  assert.equal(r.seen.filter((s) => s.path === "/elsewhere").length, 0);
  assert.equal(r.seen.length, 6);
  assert.deepEqual(await d.services.ledger.listNotificationOutbox(10), []);
});

Deno.test("two daemons on one ledger: one of them delivers each notification", async () => {
  await using home = await tempDir("svc-deliver-two-");
  await using r = receiver(() => new Response(null, { status: 200 }));
  const config = notifyConfig({ ops: { url: `${r.url}/hook`, secret_env: "NOTIFY_SECRET" } });
  await using a = await startTestDaemon(home.path, { config, env: ENV });
  await using b = await startTestDaemon(home.path, { config, env: ENV });
  for (let i = 0; i < 3; i++) await failRun(i % 2 ? a : b);
  await eventually(async () =>
    (await a.services.ledger.listNotificationOutbox(10)).length === 0 && r.seen.length >= 3
      ? true
      : undefined
  );
  const ids = r.seen.map((s) => s.headers.get("webhook-id"));
  assert.equal(new Set(ids).size, 3);
  assert.equal(ids.length, 3);
  assert.deepEqual(
    [a.daemon.notifications.state().mode, b.daemon.notifications.state().mode].sort(),
    ["leader", "standby"],
  );
});

Deno.test("an endpoint that never answers holds up no run", async () => {
  await using home = await tempDir("svc-deliver-dead-");
  // Accepts connections and never answers.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  let accepted = 0;
  const accepting = (async () => {
    for await (const conn of listener) {
      held.push(conn);
      accepted++;
    }
  })();
  try {
    await using d = await startTestDaemon(home.path, {
      config: notifyConfig({
        dead: { url: `http://127.0.0.1:${listener.addr.port}/`, secret_env: "NOTIFY_SECRET" },
      }, { timeout_s: 120 }),
      env: ENV,
    });
    await failRun(d);
    await eventually(() => Promise.resolve(accepted > 0 ? true : undefined), {
      what: "the attempt",
    });
    // While that attempt hangs, runs start, fail (another notification) and succeed as ever.
    await failRun(d);
    const run = await d.services.runs.start({
      script: `return await agent("x")`,
      fake_dispatch: true,
    }, LOCAL);
    assert.equal((await d.services.runs.wait(run.run_id, LOCAL)).state, "succeeded");
    assert.equal((await d.services.notifications.list(LOCAL)).items.length, 2);
    // The first attempt has still not ended: the runs went on without it.
    const [first] = (await d.services.notifications.list(LOCAL)).items.slice(-1);
    assert.deepEqual(await d.services.ledger.listNotificationDeliveries("local", first!.seq), []);
    assert.ok(d.daemon.notifications.state().in_flight >= 1);
    for (const conn of held) conn.close();
    await d.daemon.stop();
  } finally {
    listener.close();
    await accepting.catch(() => {});
  }
});

Deno.test("an attempt that gets no answer within timeout_s fails and is retried", async () => {
  await using home = await tempDir("svc-deliver-timeout-");
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    await using d = await startTestDaemon(home.path, {
      config: notifyConfig({
        slow: { url: `http://127.0.0.1:${listener.addr.port}/`, secret_env: "NOTIFY_SECRET" },
      }, { timeout_s: 0.2, max_attempts: 2 }),
      env: ENV,
    });
    await failRun(d);
    const [note] = (await d.services.notifications.list(LOCAL)).items;
    const [ended] = await eventually(async () => {
      const all = await d.services.ledger.listNotificationDeliveries("local", note!.seq);
      return all[0]?.status === "failed" ? all : undefined;
    }, { what: "the delivery to give up" });
    assert.equal(ended!.attempts, 2);
    assert.match(ended!.last_error ?? "", /no answer within 200 ms/);
    await d.daemon.stop();
  } finally {
    for (const conn of held) conn.close();
    listener.close();
    await accepting.catch(() => {});
  }
});

Deno.test("a notification older than max_age_s is given up, not sent", async () => {
  await using home = await tempDir("svc-deliver-old-");
  await using r = receiver(() => new Response(null, { status: 200 }));
  const config = notifyConfig({ ops: { url: `${r.url}/hook`, secret_env: "NOTIFY_SECRET" } }, {
    max_age_s: 1,
  });
  {
    // No daemon yet: the notification waits in the outbox.
    await using s = await openServices({
      home: home.path,
      config,
      dispatcher: createDispatcher({ config, fakeLatencyMs: 0 }),
    });
    const run = await s.runs.start({ script: `throw new Error("x")`, fake_dispatch: true }, LOCAL);
    await s.runs.wait(run.run_id, LOCAL);
    assert.equal((await s.ledger.listNotificationOutbox(10)).length, 1);
  }
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await using d = await startTestDaemon(home.path, { config, env: ENV });
  const [note] = (await d.services.notifications.list(LOCAL)).items;
  const [gaveUp] = await eventually(async () => {
    const all = await d.services.ledger.listNotificationDeliveries("local", note!.seq);
    return all[0]?.status === "failed" ? all : undefined;
  });
  assert.match(gaveUp!.last_error ?? "", /max_age_s/);
  assert.equal(r.seen.length, 0);
});

Deno.test("only http(s) endpoint URLs without credentials are accepted from the configuration", () => {
  for (const url of ["file:///etc/passwd", "ftp://x/", "http://user:pw@127.0.0.1/", "not a url"]) {
    assert.throws(
      () => ConfigSchema.parse({ notifications: { endpoints: { x: { url, secret_env: "S" } } } }),
      url,
    );
  }
  assert.ok(
    ConfigSchema.parse({
      notifications: { endpoints: { x: { url: "https://hooks.example/n", secret_env: "S" } } },
    }),
  );
});

Deno.test("a delivery's last error is clipped in the ledger", async () => {
  await using home = await tempDir("svc-deliver-clip-");
  await using d = await startTestDaemon(home.path, { env: ENV });
  await failRun(d);
  const [note] = (await d.services.notifications.list(LOCAL)).items;
  await d.services.ledger.saveNotificationDelivery({
    notification_id: note!.id,
    owner: "local",
    seq: note!.seq,
    endpoint: "x",
    status: "pending",
    attempts: 1,
    first_at: note!.at,
    last_error: "e".repeat(10_000),
  });
  const [saved] = await d.services.ledger.listNotificationDeliveries("local", note!.seq);
  assert.ok((saved!.last_error ?? "").length < 600);
});

Deno.test("a deliverer stopped by a reload while it asks for its lease ends off and holds no lease", async () => {
  await using home = await tempDir("svc-deliverer-stop-");
  const ledger = await openLedger(home.path);
  try {
    let asked!: () => void;
    const asking = new Promise<void>((resolve) => asked = resolve);
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => answer = resolve);
    // The real ledger, its lease answered only once the test says so.
    const slow: Ledger = {
      ...ledger,
      acquireLease: async (name, options) => {
        asked();
        await answered;
        return await ledger.acquireLease(name, options);
      },
    };
    const settings = notifyConfig({
      ops: { url: "http://127.0.0.1:9/hook", secret_env: "NOTIFY_SECRET" },
    }).notifications;
    const deliverer = new NotificationDeliverer(slow, {
      holder: "host_a",
      settings,
      tickMs: 60_000,
    });
    deliverer.start();
    await asking;
    // A reload takes every endpoint away while the first tick waits for its lease.
    await deliverer.configure({ ...settings, endpoints: {} });
    answer();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(deliverer.state().mode, "off");
    const lease = await ledger.readLease(NOTIFICATION_LEASE);
    assert.equal(lease.holder, null, "the lease is free for another daemon");
  } finally {
    ledger.close();
  }
});
