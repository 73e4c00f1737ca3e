/**
 * This host's agent card, in the two shapes clients read: the A2A 1.0 card
 * (`supportedInterfaces`, proto-JSON security schemes) and the 0.3 card (`url`,
 * `preferredTransport`, `protocolVersion`), built from one description so they never disagree.
 * @module
 */
import { VERSION } from "../version.ts";
import type { WorkflowSkill } from "./workflow_skills.ts";

/** The path of the JSON-RPC endpoint the cards name. */
export const JSON_RPC_PATH = "/a2a";
/** The protocol version of the 1.0 interface. */
export const PROTOCOL_VERSION = "1.0";
/** The protocol version the 0.3 card and interface declare. */
export const LEGACY_PROTOCOL_VERSION = "0.3";

/** Input and output media types svc reads and answers: text, and JSON data parts. */
const MODES = ["text/plain", "application/json"];

/** What both cards are built from. */
export interface CardSource {
  /** The server's base URL, e.g. `http://127.0.0.1:41523`. */
  baseUrl: string;
  /**
   * The named workflows offered, one skill each: only on the authenticated extended card (the
   * public card names none, so that strangers learn nothing of what the host keeps).
   */
  workflows: readonly WorkflowSkill[];
}

/** A skill as both card shapes write it (the 0.3 and 1.0 skill objects agree on these fields). */
interface SkillJson {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
}

function skillsOf(source: CardSource): SkillJson[] {
  return [
    {
      id: "dispatch",
      name: "Dispatch",
      description:
        "Sends the message's text to one of this host's coding agents or model APIs (read-only sandbox) and answers with its reply.",
      tags: ["svc", "dispatch"],
      examples: ["Summarise what this repository does."],
    },
    {
      id: "workflow",
      name: "Run a workflow",
      description:
        "Runs one of this host's named workflows: metadata 'svc.workflow' names it, 'svc.args' holds its arguments. The authenticated extended card lists them.",
      tags: ["svc", "workflow"],
    },
    ...source.workflows.map((workflow) => ({
      id: `workflow:${workflow.name}`,
      name: workflow.name,
      description: workflow.description,
      tags: ["svc", "workflow"],
    })),
  ];
}

const DESCRIPTION =
  "svc: runs prompts on coding agents and model APIs, and named JavaScript workflows of agent calls. " +
  "A message is a dispatch; metadata 'svc.workflow' (with 'svc.args') runs a named workflow instead.";

/** The A2A 1.0 agent card, as JSON. */
export function agentCardJson(source: CardSource): Record<string, unknown> {
  const url = `${source.baseUrl}${JSON_RPC_PATH}`;
  return {
    name: "svc",
    description: DESCRIPTION,
    version: VERSION,
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", protocolVersion: PROTOCOL_VERSION },
      { url, protocolBinding: "JSONRPC", protocolVersion: LEGACY_PROTOCOL_VERSION },
    ],
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: true },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: "bearer",
          description:
            "A token of the dashboard's (SVC_DASHBOARD_OWNER_TOKENS): the owner it is bound to owns the tasks",
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skillsOf(source),
  };
}

/**
 * The 0.3 agent card, as JSON. With `embedInterfaces` it also carries the 1.0 card's
 * `supportedInterfaces`, as the SDK's own server answers a card request that names no version:
 * 0.3 readers ignore the field, 1.0 readers find their interface in it.
 */
export function legacyAgentCardJson(
  source: CardSource,
  options: { embedInterfaces?: boolean } = {},
): Record<string, unknown> {
  const url = `${source.baseUrl}${JSON_RPC_PATH}`;
  return {
    name: "svc",
    description: DESCRIPTION,
    version: VERSION,
    protocolVersion: "0.3.0",
    url,
    preferredTransport: "JSONRPC",
    capabilities: { streaming: true, pushNotifications: false },
    supportsAuthenticatedExtendedCard: true,
    securitySchemes: {
      bearer: { type: "http", scheme: "bearer", description: "A token of the dashboard's" },
    },
    security: [{ bearer: [] }],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skillsOf(source),
    ...(options.embedInterfaces
      ? { supportedInterfaces: agentCardJson(source).supportedInterfaces }
      : {}),
  };
}
