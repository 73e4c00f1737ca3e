import assert from "node:assert/strict";
import { dashboardApp } from "../src/http/mod.ts";
import type { RunStatus, TaskStatus } from "../src/ledger/mod.ts";
import { fixture, LOCAL, tempDir } from "./helpers.ts";
import { configOf, eventually, startTestDaemon, type TestDaemon } from "./daemon_helpers.ts";
import { TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";

const GITHUB_SECRET = "gh-secret-for-tests";
/** A Standard Webhooks secret: `whsec_` and base64. */
const STANDARD_SECRET = `whsec_${btoa("standard-secret-bytes-32-long!!")}`;

const CONFIG = configOf({
  webhooks: {
    push: {
      secret_env: "HOOK_PUSH_SECRET",
      style: "github",
      owner: "alice",
      workflow: "echo-args",
      fake_dispatch: true,
    },
    issue: {
      secret_env: "HOOK_ISSUE_SECRET",
      style: "standard",
      owner: "alice",
      prompt_template: "Triage issue #{{payload.issue.number}}: {{payload.issue.title}}",
      options: { label: "triage" },
      fake_dispatch: true,
      max_body_bytes: 4096,
    },
    unset: { secret_env: "HOOK_UNSET_SECRET", workflow: "echo-args" },
    release: {
      secret_env: "HOOK_PUSH_SECRET",
      style: "github",
      owner: "alice",
      workflow: "echo-args",
      fake_dispatch: true,
      replay_window_s: 3600,
    },
  },
});
const ENV = { HOOK_PUSH_SECRET: GITHUB_SECRET, HOOK_ISSUE_SECRET: STANDARD_SECRET };
const ALICE = { owner: "alice" };

async function hmac(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const cryptoKey = await crypto.subtle.importKey(
    "raw",
    key as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(
    await crypto.subtle.sign("HMAC", cryptoKey, data as Uint8Array<ArrayBuffer>),
  );
}

async function githubHeaders(body: string, delivery: string, secret = GITHUB_SECRET) {
  const digest = await hmac(new TextEncoder().encode(secret), new TextEncoder().encode(body));
  const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
  return {
    "content-type": "application/json",
    "x-github-event": "push",
    "x-github-delivery": delivery,
    "x-hub-signature-256": `sha256=${hex}`,
  };
}

/** The replay key the receiver keeps a GitHub-style delivery under: SHA-256 of signature and body. */
async function githubReplayKey(body: string, headers: Record<string, string>): Promise<string> {
  const hex = headers["x-hub-signature-256"]!.slice(7);
  const signature = Uint8Array.from(hex.match(/../g)!, (pair) => parseInt(pair, 16));
  const bytes = new Uint8Array([...signature, ...new TextEncoder().encode(body)]);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `sha256:${[...digest].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function standardHeaders(body: string, id: string, options: { at?: number } = {}) {
  const timestamp = String(Math.floor((options.at ?? Date.now()) / 1000));
  const key = Uint8Array.from(atob(STANDARD_SECRET.slice(6)), (c) => c.charCodeAt(0));
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const signature = btoa(String.fromCharCode(...await hmac(key, signed)));
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": `v1,${
      btoa("not the right one, but rotated keys send several!")
    } v1,${signature}`,
  };
}

async function post(
  daemon: TestDaemon,
  hook: string,
  body: string,
  headers: Record<string, string>,
) {
  const response = await fetch(`${daemon.url}/webhooks/${hook}`, { method: "POST", body, headers });
  return { status: response.status, body: await response.json() };
}

async function withHookDaemon(test: (daemon: TestDaemon) => Promise<void>): Promise<void> {
  await using home = await tempDir("svc-hooks-");
  await Deno.mkdir(`${home.path}/workflows`);
  await Deno.copyFile(fixture("daemon/echo_args.js"), `${home.path}/workflows/echo-args.js`);
  await using daemon = await startTestDaemon(home.path, { config: CONFIG, env: ENV });
  await test(daemon);
}

Deno.test("a GitHub-signed delivery starts the hook's workflow with the payload as args, once; a replay does nothing twice", async () => {
  await withHookDaemon(async (daemon) => {
    const payload = JSON.stringify({ ref: "refs/heads/main", commits: [{ id: "abc" }] });
    const headers = await githubHeaders(payload, "delivery-0001");
    const first = await post(daemon, "push", payload, headers);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    assert.equal(first.body.duplicate, false);
    assert.equal(first.body.outcome, "accepted");
    const runId = first.body.run_id as string;
    const run = await eventually(async () => {
      const status = await daemon.services.runs.get(runId, ALICE);
      return status && status.state !== "queued" && status.state !== "running" ? status : undefined;
    }, { what: "the hook's run to end" }) as RunStatus;
    assert.equal(run.state, "succeeded", JSON.stringify(run.error));
    assert.equal(run.owner, "alice");
    assert.deepEqual(run.result, { args: JSON.parse(payload) });
    assert.deepEqual(run.trigger, { kind: "webhook", hook: "push", delivery_id: "delivery-0001" });
    assert.deepEqual(run.started_by, { via: "daemon", text: "webhook push" });
    // The same delivery again: answered as the first, nothing new started.
    const again = await post(daemon, "push", payload, headers);
    assert.equal(again.status, 200);
    assert.equal(again.body.duplicate, true);
    assert.equal(again.body.run_id, runId);
    assert.equal((await daemon.services.runs.list(ALICE)).length, 1);
    // Every signed delivery is in the owner's event stream.
    const app = dashboardApp(daemon.services, { auth: TWO_OWNERS });
    const events = await app.fetch(
      new Request("http://127.0.0.1/api/events", {
        headers: { authorization: `Bearer ${TOKENS.alice}` },
      }),
    );
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes('"state":"duplicate"')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    await reader.cancel();
    assert.match(
      text,
      /event: webhook\n.*"id":"push","state":"accepted","delivery_id":"delivery-0001"/,
    );
    assert.match(text, /"state":"duplicate","delivery_id":"delivery-0001"/);
    assert.equal(LOCAL.owner, "local");
  });
});

Deno.test("a Standard Webhooks delivery dispatches the prompt rendered from the template, and a replayed id does nothing twice", async () => {
  await withHookDaemon(async (daemon) => {
    const payload = JSON.stringify({
      issue: { number: 42, title: "Crash on start" },
      __proto__x: 1,
    });
    const headers = await standardHeaders(payload, "msg_2hV1");
    const first = await post(daemon, "issue", payload, headers);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const taskId = first.body.task_id as string;
    const task = await eventually(async () => {
      const status = await daemon.services.tasks.get(taskId, ALICE);
      return status?.state === "succeeded" ? status : undefined;
    }, { what: "the hook's task to succeed" }) as TaskStatus;
    assert.equal(task.prompt, "Triage issue #42: Crash on start");
    assert.equal(task.label, "triage");
    const replay = await post(daemon, "issue", payload, headers);
    assert.equal(replay.status, 200);
    assert.deepEqual(
      { duplicate: replay.body.duplicate, task_id: replay.body.task_id },
      { duplicate: true, task_id: taskId },
    );
    assert.equal((await daemon.services.tasks.list(ALICE)).length, 1);
  });
});

Deno.test("webhook refusals are API errors: bad or stale signatures 401, unknown hook 404, oversized body 413, unset secret 503, not JSON 400", async () => {
  await withHookDaemon(async (daemon) => {
    const payload = JSON.stringify({ a: 1 });
    const expectError = (
      result: { status: number; body: Record<string, unknown> },
      status: number,
      code: string,
      message: RegExp,
    ) => {
      assert.equal(result.status, status, JSON.stringify(result.body));
      const error = result.body.error as { status: number; code: string; message: string };
      assert.equal(error.status, status);
      assert.equal(error.code, code);
      assert.match(error.message, message);
    };
    expectError(
      await post(daemon, "push", payload, await githubHeaders(payload, "d-1", "wrong secret")),
      401,
      "unauthenticated",
      /^Cannot accept the delivery: the signature does not match the body$/,
    );
    // A body changed after signing fails too.
    expectError(
      await post(daemon, "push", payload + " ", await githubHeaders(payload, "d-2")),
      401,
      "unauthenticated",
      /does not match/,
    );
    expectError(
      await post(daemon, "push", payload, { "x-github-delivery": "d-3" }),
      401,
      "unauthenticated",
      /X-Hub-Signature-256 header is missing/,
    );
    expectError(
      await post(
        daemon,
        "issue",
        payload,
        await standardHeaders(payload, "m-1", { at: Date.now() - 3600_000 }),
      ),
      401,
      "unauthenticated",
      /webhook-timestamp is more than 300 s from now/,
    );
    const forged = await standardHeaders(payload, "m-2");
    forged["webhook-signature"] = `v1,${btoa("x".repeat(32))}`;
    expectError(
      await post(daemon, "issue", payload, forged),
      401,
      "unauthenticated",
      /no v1 signature matches/,
    );
    expectError(await post(daemon, "nope", payload, {}), 404, "not_found", /no webhook "nope"/);
    const big = JSON.stringify({ text: "x".repeat(5000) });
    expectError(
      await post(daemon, "issue", big, await standardHeaders(big, "m-3")),
      413,
      "payload_too_large",
      /larger than 4096 bytes/,
    );
    expectError(
      await post(daemon, "unset", payload, {}),
      503,
      "unavailable",
      /HOOK_UNSET_SECRET is not set/,
    );
    const text = "not json";
    expectError(
      await post(daemon, "push", text, await githubHeaders(text, "d-4")),
      400,
      "invalid_request",
      /not UTF-8 JSON/,
    );
    // Nothing was started by any of them.
    assert.equal((await daemon.services.runs.list(ALICE)).length, 0);
    assert.equal((await daemon.services.tasks.list(ALICE)).length, 0);
    const health = await daemon.daemon.health();
    assert.equal(health.webhooks.rejected, 6);
  });
});

Deno.test("a GitHub-style delivery replayed under a new X-GitHub-Delivery, or with its signature in upper case, starts nothing new", async () => {
  await withHookDaemon(async (daemon) => {
    const payload = JSON.stringify({ ref: "refs/heads/main", after: "0123abc" });
    const headers = await githubHeaders(payload, "delivery-genuine");
    const first = await post(daemon, "push", payload, headers);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const replays = [
      { ...headers, "x-github-delivery": "delivery-forged-1" },
      { ...headers, "x-github-delivery": "delivery-forged-2" },
      {
        ...headers,
        "x-github-delivery": "delivery-forged-3",
        "x-hub-signature-256": `sha256=${headers["x-hub-signature-256"].slice(7).toUpperCase()}`,
      },
    ];
    for (const replay of replays) {
      const again = await post(daemon, "push", payload, replay);
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.body.duplicate, true);
      assert.equal(again.body.run_id, first.body.run_id);
      assert.equal(again.body.delivery_id, "delivery-genuine");
    }
    // A different body is different work, whatever its delivery id.
    const other = JSON.stringify({ ref: "refs/heads/main", after: "4567def" });
    const next = await post(daemon, "push", other, await githubHeaders(other, "delivery-genuine"));
    assert.equal(next.status, 202, JSON.stringify(next.body));
    assert.equal((await daemon.services.runs.list(ALICE)).length, 2);
    const health = await daemon.daemon.health();
    assert.equal(health.webhooks.duplicate, 3);
  });
});

Deno.test("a webhook's replay record is kept for its replay window: within it a repeat is a duplicate, past it the record is replaced and old ones are removed", async () => {
  await withHookDaemon(async (daemon) => {
    const { ledger } = daemon.services;
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    const payload = JSON.stringify({ action: "published", release: { tag: "v1" } });
    const headers = await githubHeaders(payload, "delivery-old");
    const replayKey = await githubReplayKey(payload, headers);
    const old = {
      hook: "release",
      delivery_id: "delivery-old",
      replay_key: replayKey,
      owner: "alice",
      received_at: twoHoursAgo,
      outcome: "accepted" as const,
      run_id: "run_from_long_ago",
    };
    const unrelated = { ...old, delivery_id: "delivery-other", replay_key: "sha256:unrelated" };
    const year = { windowMs: 366 * 24 * 3600_000 };
    assert.equal(await ledger.claimDelivery(old, year), undefined);
    assert.equal(await ledger.claimDelivery(unrelated, year), undefined);
    // The hook's window is an hour: the two-hour-old record no longer makes it a duplicate.
    const fresh = await post(daemon, "release", payload, headers);
    assert.equal(fresh.status, 202, JSON.stringify(fresh.body));
    assert.notEqual(fresh.body.run_id, "run_from_long_ago");
    const again = await post(daemon, "release", payload, headers);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.run_id, fresh.body.run_id);
    // The claim removed the expired record it did not replace: claiming it again is new.
    assert.equal(await ledger.claimDelivery(unrelated, year), undefined);
    assert.equal((await daemon.services.runs.list(ALICE)).length, 1);
  });
});
