/**
 * The A2A server as a Hono app, testable through its `fetch`: `GET /health` and the agent
 * cards are open; the JSON-RPC endpoint needs a bearer token of the dashboard's, and acts as
 * the owner the token is bound to.
 * @module
 */
import { Hono } from "hono";
import { AgentCard } from "@a2a-js/sdk";
import { DefaultRequestHandler } from "@a2a-js/sdk/server";
import type { WorkflowPlaces } from "../engine/mod.ts";
import { SvcError } from "../errors/mod.ts";
import {
  type AuthSettings,
  dashboardAuth,
  type DashboardEnv,
  errorResponse,
  renderError,
} from "../http/mod.ts";
import type { Services } from "../services/mod.ts";
import { VERSION } from "../version.ts";
import {
  agentCardJson,
  type CardSource,
  JSON_RPC_PATH,
  legacyAgentCardJson,
} from "./agent_card.ts";
import { SvcExecutor } from "./executor.ts";
import { admitSend } from "./admit_send.ts";
import { isLegacyRequest, jsonRpcHandler } from "./json_rpc.ts";
import { staleSettler } from "./stale_tasks.ts";
import { LedgerTaskStore } from "./task_store.ts";
import { type WorkflowSkill, workflowSkills } from "./workflow_skills.ts";

/** How long the list of workflow skills is reused before the folders are read again, in ms. */
const SKILLS_TTL_MS = 10_000;

/** Options of {@linkcode a2aApp}. */
export interface A2aAppOptions {
  /** Tokens and owners (the dashboard's settings). */
  auth: AuthSettings;
  /** The server's base URL, as the cards name it, e.g. `http://127.0.0.1:41523`. */
  baseUrl: string;
  /** Where named workflows are found. Default: the current directory, `SVC_HOME`, `HOME`. */
  places: WorkflowPlaces;
  /** Largest JSON-RPC body, in bytes. Default 1 MiB. */
  maxBodyBytes?: number;
}

/** The A2A app: its `fetch`, and the executor (which knows the tasks this process serves). */
export interface A2aApp {
  /** Answers one request. */
  fetch(request: Request): Promise<Response>;
  /** The executor: the svc side of every A2A task. */
  readonly executor: SvcExecutor;
}

function cardResponse(body: unknown): Response {
  return new Response(JSON.stringify(body), {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-cache",
      vary: "A2A-Version",
    },
  });
}

/** Builds the A2A app over `services`. */
export async function a2aApp(services: Services, options: A2aAppOptions): Promise<A2aApp> {
  let skills: { at: number; list: WorkflowSkill[] } = {
    at: Date.now(),
    list: await workflowSkills(options.places),
  };
  // The open cards are generic: which workflows the host keeps is for token holders, on the
  // authenticated extended card the SDK serves over JSON-RPC (behind the bearer check).
  const source: CardSource = { baseUrl: options.baseUrl, workflows: [] };
  const extendedSource = async (): Promise<CardSource> => {
    if (Date.now() - skills.at > SKILLS_TTL_MS) {
      skills = { at: Date.now(), list: await workflowSkills(options.places) };
    }
    return { baseUrl: options.baseUrl, workflows: skills.list };
  };
  const executor = new SvcExecutor(services, { places: options.places });
  const handler = new DefaultRequestHandler(
    AgentCard.fromJSON(agentCardJson(source)),
    new LedgerTaskStore(services.a2aTasks, {
      onSaved: (task) => executor.noteSaved(task),
      settle: staleSettler(services),
    }),
    executor,
    undefined,
    undefined,
    undefined,
    async () => AgentCard.fromJSON(agentCardJson(await extendedSource())),
  );
  const serveJsonRpc = jsonRpcHandler(handler, {
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
    admit: (caller, params) => admitSend(services, caller, params),
  });

  const app = new Hono<DashboardEnv>();
  app.onError((error) => renderError(error));
  app.notFound((c) =>
    errorResponse(
      new SvcError("not_found", `Cannot find ${c.req.method} ${c.req.path.slice(0, 200)}`),
    )
  );
  app.get("/health", (c) => c.json({ status: "ok", version: VERSION }));
  app.get("/.well-known/agent-card.json", (c) =>
    cardResponse(
      isLegacyRequest(c.req.header("a2a-version"))
        ? legacyAgentCardJson(source, { embedInterfaces: true })
        : agentCardJson(source),
    ));
  app.get("/.well-known/agent.json", () => cardResponse(legacyAgentCardJson(source)));
  app.use(JSON_RPC_PATH, dashboardAuth({ settings: options.auth }));
  app.post(JSON_RPC_PATH, (c) => serveJsonRpc(c.req.raw, c.get("caller")));
  return { fetch: (request) => Promise.resolve(app.fetch(request)), executor };
}
