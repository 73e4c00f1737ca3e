import { SvcError } from "../errors/mod.ts";
import type { Config } from "../config/mod.ts";
import {
  type AutomationAction,
  type AutomationQuota,
  type AutomationRecord,
  type AutomationRefusal,
  type Caller,
  type DaemonLedger,
  type FiredSlot,
  isId,
  type LedgerCore,
  mayAccess,
  newId,
  shownId,
} from "../ledger/mod.ts";
import { type AutomationConfig, AutomationRequestSchema, describeIssue } from "../schemas/mod.ts";
import { WorkspacePolicy } from "../workspace/mod.ts";
import { shortestGapMs } from "./cron.ts";

/** An automation with the last slot it fired. */
export interface AutomationView extends AutomationRecord {
  /** The last slot it fired and what that started; null before the first. */
  last_fired: FiredSlot | null;
}

/** The owner of configured work that names none. */
const DEFAULT_OWNER = "local";

/** The action of a request or a configured automation. */
function actionOf(value: AutomationConfig): AutomationAction {
  if (value.dispatch !== undefined) return { dispatch: value.dispatch };
  return {
    workflow: value.workflow!,
    ...(value.args !== undefined ? { args: value.args } : {}),
    ...(value.fake_dispatch !== undefined ? { fake_dispatch: value.fake_dispatch } : {}),
  };
}

/** The configuration file's automations, as records (`config.<name>`). */
export function configuredAutomations(config: Config, at: string): AutomationRecord[] {
  return Object.entries(config.automations).map(([name, value]) => ({
    automation_id: `config.${name}`,
    name,
    owner: value.owner ?? DEFAULT_OWNER,
    cron: value.cron,
    ...(value.timezone !== undefined ? { timezone: value.timezone } : {}),
    action: actionOf(value),
    source: "config",
    created_at: at,
  }));
}

/** Throws the error of a refused save: a quota reached (`rate_limited`), or a name taken. */
function refuse(refusal: AutomationRefusal | undefined, record: AutomationRecord): void {
  if (refusal === undefined) return;
  if (refusal.reason === "name") {
    throw new SvcError("conflict", `Cannot create the automation: '${record.name}' exists already`);
  }
  // No Retry-After: the quota frees up when the owner deletes one, not with time.
  const who = refusal.reason === "owner" ? `owner '${record.owner}'` : "the host";
  throw new SvcError(
    "rate_limited",
    `Cannot create the automation: ${who} has ${refusal.count} automations, the most allowed`,
  );
}

/**
 * Automations: named workflows or dispatches on a cron schedule, from the configuration file
 * (read-only here) and made through the API (kept in the ledger). The daemon's scheduler fires
 * them; this service lists, creates and deletes them under the owner rule.
 */
export class Automations {
  readonly #ledger: DaemonLedger & LedgerCore;
  #configured: AutomationRecord[];
  #quota: AutomationQuota;
  #minIntervalS: number;
  readonly #workspace: WorkspacePolicy;

  /**
   * The automations of `config` and of `ledger`; `workspace` checks the workdir of a remote
   * caller's dispatch (default: no roots, as the task manager's).
   */
  constructor(
    options: { ledger: DaemonLedger & LedgerCore; config: Config; workspace?: WorkspacePolicy },
  ) {
    this.#ledger = options.ledger;
    this.#workspace = options.workspace ??
      new WorkspacePolicy({ forbidden: [options.ledger.home], home: options.ledger.home });
    this.#configured = configuredAutomations(options.config, new Date().toISOString());
    const { daemon } = options.config;
    this.#quota = { perOwner: daemon.automations_per_owner, total: daemon.automations_total };
    this.#minIntervalS = daemon.automation_min_interval_s;
  }

  /**
   * Takes a reloaded configuration: its automations replace the file's earlier ones (the
   * scheduler sees them at its next tick), and its quotas bind later creations. An automation
   * whose definition is unchanged keeps its creation time; a new or changed one counts from now,
   * so a reload never fires a slot that passed before it.
   */
  configure(config: Config): void {
    const before = new Map(this.#configured.map((record) => [record.automation_id, record]));
    const same = (a: AutomationRecord, b: AutomationRecord | undefined) =>
      b !== undefined &&
      JSON.stringify({ ...a, created_at: "" }) === JSON.stringify({ ...b, created_at: "" });
    this.#configured = configuredAutomations(config, new Date().toISOString()).map((record) => {
      const earlier = before.get(record.automation_id);
      return same(record, earlier) ? earlier! : record;
    });
    const { daemon } = config;
    this.#quota = { perOwner: daemon.automations_per_owner, total: daemon.automations_total };
    this.#minIntervalS = daemon.automation_min_interval_s;
  }

  /**
   * Refuses, before it is saved, a remote caller's dispatch whose workdir the workspace policy
   * refuses; each firing checks it again, since the roots may change.
   */
  async #checkWorkdir(record: AutomationRecord, caller: Caller): Promise<void> {
    const workdir = "dispatch" in record.action ? record.action.dispatch.workdir : undefined;
    if (!caller.remote || typeof workdir !== "string") return;
    await this.#workspace.workdirFor(caller, workdir, { what: "dispatch.workdir" });
  }

  /** Every automation, of every owner: what the scheduler fires. */
  async all(): Promise<AutomationRecord[]> {
    return [...this.#configured, ...(await this.#ledger.listAutomations())];
  }

  /** The caller's automations (everyone's for an administrator), with their last slot. */
  async list(caller: Caller): Promise<AutomationView[]> {
    const mine = (await this.all()).filter((record) => mayAccess(caller, record.owner));
    return await Promise.all(mine.map(async (record) => ({
      ...record,
      last_fired: (await this.#ledger.lastSlot(record.automation_id)) ?? null,
    })));
  }

  /** Makes an automation of the caller from a request (`AutomationRequestSchema`). */
  async create(input: unknown, caller: Caller): Promise<AutomationView> {
    const parsed = AutomationRequestSchema.safeParse(input);
    if (!parsed.success) {
      throw new SvcError(
        "invalid_request",
        `Cannot create the automation: ${describeIssue(parsed.error)}`,
      );
    }
    const request = parsed.data;
    if (caller.remote) this.#checkInterval(request.cron, request.timezone);
    const all = await this.all();
    if (all.some((record) => record.owner === caller.owner && record.name === request.name)) {
      throw new SvcError(
        "conflict",
        `Cannot create the automation: '${request.name}' exists already`,
      );
    }
    const record: AutomationRecord = {
      automation_id: newId("aut"),
      name: request.name,
      owner: caller.owner,
      cron: request.cron,
      ...(request.timezone !== undefined ? { timezone: request.timezone } : {}),
      action: actionOf(request),
      source: "api",
      ...(caller.remote ? { remote: true } : {}),
      created_at: new Date().toISOString(),
    };
    await this.#checkWorkdir(record, caller);
    refuse(await this.#ledger.saveAutomation(record, this.#quota), record);
    return { ...record, last_fired: null };
  }

  /**
   * Refuses a schedule of a remote caller that fires more often than
   * `daemon.automation_min_interval_s`: a schedule is a standing order to the host, and one that
   * fires every second would queue work faster than it can run. The operator's own (the
   * configuration file's) keep any schedule.
   */
  #checkInterval(cron: string, timezone: string | undefined): void {
    const minMs = this.#minIntervalS * 1000;
    const gap = shortestGapMs(cron, { after: new Date(), timezone, below: minMs });
    if (gap === null || gap >= minMs) return;
    throw new SvcError(
      "invalid_argument",
      `Cannot create the automation: '${cron}' fires ${gap / 1000} s apart; an automation made ` +
        `over the API fires at most once every ${this.#minIntervalS} s`,
    );
  }

  /**
   * Deletes one of the caller's automations. An unknown id and another owner's answer
   * `not_found` alike; one of the configuration file is a `conflict` (edit the file).
   */
  async delete(automationId: string, caller: Caller): Promise<void> {
    const configured = this.#configured.find((record) => record.automation_id === automationId);
    if (configured && mayAccess(caller, configured.owner)) {
      throw new SvcError(
        "conflict",
        `Cannot delete automation '${automationId}': it is defined in the configuration file`,
      );
    }
    const found = isId("aut", automationId)
      ? (await this.#ledger.listAutomations()).find((r) => r.automation_id === automationId)
      : undefined;
    if (!found || !mayAccess(caller, found.owner)) {
      throw new SvcError(
        "not_found",
        `Cannot delete automation '${shownId(automationId)}': no such automation`,
      );
    }
    await this.#ledger.deleteAutomation(automationId);
  }
}
