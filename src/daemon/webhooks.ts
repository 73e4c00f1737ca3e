import { SvcError } from "../errors/mod.ts";
import type { WebhookConfig } from "../config/mod.ts";
import { hostEnv } from "../host_env/mod.ts";
import { callerOf, type WebhookDelivery } from "../ledger/mod.ts";
import { readBody } from "../platform/mod.ts";
import { jsonProblem, type JsonValue } from "../schemas/mod.ts";
import type { Services } from "../services/mod.ts";
import { renderPrompt } from "./prompt_template.ts";
import { startWork, type WorkAction } from "./start_work.ts";
import { verifyGithub, verifyStandard } from "./webhook_signature.ts";

/** What a delivery came to. */
export interface DeliveryResult {
  /** The hook. */
  hook: string;
  /** The sender's delivery id. */
  delivery_id: string;
  /** True when the id was seen before: nothing was started again. */
  duplicate: boolean;
  /** `accepted`: its work is queued; `failed`: starting it was refused (see `error`). */
  outcome: WebhookDelivery["outcome"];
  /** The run it started. */
  run_id?: string;
  /** The task it started. */
  task_id?: string;
  /** Why its work could not start. */
  error?: { code: string; message: string };
}

/** Counts of deliveries since the daemon started, for the health snapshot. */
export interface WebhookCounts {
  /** Configured hooks. */
  hooks: string[];
  /** Deliveries whose work was queued. */
  accepted: number;
  /** Repeated deliveries (nothing done). */
  duplicate: number;
  /** Deliveries refused before anything was recorded: bad signature, too large. */
  rejected: number;
  /** Signed deliveries whose work could not start. */
  failed: number;
}

const HOOK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * The receiving side of webhooks: a delivery to a configured hook is size-checked, its
 * signature verified over the raw bytes before anything parses them, what the signature covers
 * recorded once per replay window (a repeat does nothing again), and its action queued under the
 * hook's owner. Every
 * signed delivery enters the owner's activity stream; refusals answer with an SvcError.
 */
export class WebhookReceiver {
  readonly #services: Services;
  readonly #env: (name: string) => string | undefined;
  readonly #counts = { accepted: 0, duplicate: 0, rejected: 0, failed: 0 };

  /**
   * A receiver for the hooks of the services' configuration, as it is at each delivery (a
   * reload adds and removes hooks); secrets come from `env`.
   */
  constructor(services: Services, options: { env?: (name: string) => string | undefined } = {}) {
    this.#services = services;
    this.#env = options.env ?? hostEnv;
  }

  /** The hooks of the configuration now. */
  get #hooks(): Record<string, WebhookConfig> {
    return this.#services.config.webhooks;
  }

  /** Deliveries so far. */
  counts(): WebhookCounts {
    return { hooks: Object.keys(this.#hooks), ...this.#counts };
  }

  #hook(name: string): WebhookConfig {
    const hook = HOOK_NAME.test(name) && Object.hasOwn(this.#hooks, name)
      ? this.#hooks[name]
      : undefined;
    if (!hook) {
      throw new SvcError(
        "not_found",
        `Cannot accept the delivery: no webhook ${JSON.stringify(name.slice(0, 64))}`,
      );
    }
    return hook;
  }

  /** Handles one delivery to hook `name`: headers and the raw body stream. */
  async receive(
    name: string,
    delivery: { headers: Headers; body: ReadableStream<Uint8Array> | null },
  ): Promise<DeliveryResult> {
    const hook = this.#hook(name);
    const secret = this.#env(hook.secret_env);
    if (!secret) {
      throw new SvcError(
        "unavailable",
        `Cannot accept deliveries for webhook '${name}': its secret variable ${hook.secret_env} is not set`,
      );
    }
    const body = await this.#read(hook, delivery);
    const verified = hook.style === "github"
      ? await verifyGithub(delivery.headers, body, secret)
      : await verifyStandard(delivery.headers, body, {
        secret,
        toleranceS: hook.tolerance_s,
      });
    if (!verified.ok) {
      this.#counts.rejected++;
      throw new SvcError("unauthenticated", `Cannot accept the delivery: ${verified.reason}`);
    }
    const owner = callerOf(hook.owner ?? "local");
    const record: WebhookDelivery = {
      hook: name,
      delivery_id: verified.deliveryId,
      replay_key: verified.replayKey,
      owner: owner.owner,
      received_at: new Date().toISOString(),
      outcome: "received",
    };
    const { ledger } = this.#services;
    const seen = await ledger.claimDelivery(record, { windowMs: hook.replay_window_s * 1000 });
    if (seen) {
      this.#counts.duplicate++;
      await ledger.saveDelivery(seen, { duplicate: true });
      return { ...resultOf(seen), duplicate: true };
    }
    try {
      const payload = parsePayload(body);
      const started = await startWork(this.#services, actionOf(hook, payload), {
        caller: owner,
        trigger: { kind: "webhook", hook: name, delivery_id: verified.deliveryId },
      });
      const accepted: WebhookDelivery = { ...record, outcome: "accepted", ...started };
      await ledger.saveDelivery(accepted);
      this.#counts.accepted++;
      return { ...resultOf(accepted), duplicate: false };
    } catch (error) {
      const e = error instanceof SvcError
        ? error
        : new SvcError("internal", "Cannot start the hook's work");
      const failed: WebhookDelivery = {
        ...record,
        outcome: "failed",
        error: { code: e.code, message: e.message.slice(0, 500) },
      };
      await ledger.saveDelivery(failed).catch(() => {});
      this.#counts.failed++;
      // The sender learns that the request was refused and why, but nothing of this host
      // (a missing workflow's message names the folders searched): the owner sees the rest.
      if (e.code === "invalid_request" || e.code === "invalid_script") throw e;
      throw new SvcError(
        "unavailable",
        `Cannot start the work of webhook '${name}': ${
          hook.workflow !== undefined
            ? `its workflow '${hook.workflow}' cannot be started on this host`
            : "its dispatch cannot be queued"
        }`,
      );
    }
  }

  async #read(
    hook: WebhookConfig,
    delivery: { headers: Headers; body: ReadableStream<Uint8Array> | null },
  ): Promise<Uint8Array> {
    const body = await readBody(delivery, hook.max_body_bytes);
    if (body !== undefined) return body;
    this.#counts.rejected++;
    throw new SvcError(
      "payload_too_large",
      `Cannot accept the delivery: its body is larger than ${hook.max_body_bytes} bytes`,
    );
  }
}

function resultOf(delivery: WebhookDelivery): Omit<DeliveryResult, "duplicate"> {
  return {
    hook: delivery.hook,
    delivery_id: delivery.delivery_id,
    outcome: delivery.outcome,
    ...(delivery.run_id ? { run_id: delivery.run_id } : {}),
    ...(delivery.task_id ? { task_id: delivery.task_id } : {}),
    ...(delivery.error ? { error: delivery.error } : {}),
  };
}

/** The payload: UTF-8 JSON, nested within bounds; a refusal names what is wrong. */
function parsePayload(body: Uint8Array): JsonValue {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw new SvcError("invalid_request", "Cannot accept the delivery: its body is not UTF-8 JSON");
  }
  const problem = jsonProblem(value);
  if (problem) {
    throw new SvcError("invalid_request", `Cannot accept the delivery: the body ${problem}`);
  }
  return value as JsonValue;
}

/** What a delivery starts: the hook's workflow with the payload as `args`, or its prompt. */
function actionOf(hook: WebhookConfig, payload: JsonValue): WorkAction {
  if (hook.workflow !== undefined) {
    return {
      workflow: hook.workflow,
      args: payload,
      ...(hook.fake_dispatch !== undefined ? { fake_dispatch: hook.fake_dispatch } : {}),
    };
  }
  return {
    dispatch: {
      ...hook.options,
      prompt: renderPrompt(hook.prompt_template ?? "", payload),
      ...(hook.fake_dispatch !== undefined ? { fake_dispatch: hook.fake_dispatch } : {}),
    },
  };
}
