/**
 * The capability report (`GET /api/capabilities`, `svc doctor --json`): per configured provider,
 * its tool and version, its credentials or endpoint, and the sandbox levels it supports. One
 * shape for the dashboard and the command line; it never holds a secret, only variable names.
 * @module
 */
import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";

/** What is known of a harness's binary. */
export const ToolCapabilitySchema = z.object({
  command: z.string().meta({
    description:
      "the command as configured (a name on PATH or a path); a remote caller gets its name only",
  }),
  installed: z.boolean(),
  path: z.string().nullable().meta({
    description: "where the binary was found; null for a remote caller (never a host path)",
  }),
  version: z.string().nullable(),
  probe: z.enum(["answered", "failed", "timed_out", "probing", "missing"]).meta({
    description:
      "how its version flag went: answered, failed, timed_out, probing (still running when the report's deadline came), missing (no binary)",
  }),
  detail: z.string(),
  tested_version: z.string().nullable().meta({
    description: "the version svc is tested with (its CI installs exactly this one)",
  }),
  tested: z.boolean().nullable().meta({
    description: "whether the version is the tested one; null when the version is unknown",
  }),
}).meta({ id: "ToolCapability" });

/** Whether a provider's credentials or endpoint answer. */
export const CredentialsCapabilitySchema = z.object({
  state: z.enum(["ok", "refused", "missing", "unreachable", "failed", "unchecked", "not_needed"])
    .meta({
      description:
        "ok: the endpoint answered with the key; refused: it said 401/403; missing: no key variable is set; unreachable: no answer before the deadline; failed: another answer; unchecked: nothing svc can check without spending tokens; not_needed: the fake",
    }),
  key_env: z.array(z.string()).meta({ description: "the variables looked at, by NAME only" }),
  key_found: z.string().nullable().meta({ description: "the NAME of the variable that is set" }),
  endpoint: z.string().nullable().meta({
    description: "the URL probed (a model list: no tokens spent), without credentials or query",
  }),
  detail: z.string(),
}).meta({ id: "CredentialsCapability" });

/** One provider of the report. */
export const ProviderCapabilitySchema = z.object({
  name: z.string(),
  type: z.string().meta({ description: "the configuration's type: claude, codex, openai, ..." }),
  kind: z.enum(["fake", "harness", "api"]),
  tool: ToolCapabilitySchema.nullable().meta({
    description: "null for providers without a binary",
  }),
  credentials: CredentialsCapabilitySchema,
  sandbox_levels: z.array(z.enum(["read-only", "write", "full"])).meta({
    description:
      "the levels its calls can run at (full also needs the configuration's sandbox.full)",
  }),
  sandbox_detail: z.string().nullable().meta({
    description:
      "why a level is missing, or what svc changes so that the levels work (Codex: CODEX_HOME under the temp directory); null when nothing needs saying",
  }),
}).meta({ id: "ProviderCapability" });

/** The whole report. */
export const CapabilityReportSchema = z.object({
  generated_at: z.string().meta({ description: "ISO 8601" }),
  took_ms: z.number(),
  deadline_ms: z.number().meta({ description: "the bound the report is made within" }),
  sandbox_full: z.enum(["deny", "allow", "ask"]).meta({
    description: "the configuration's policy for the full level",
  }),
  providers: z.array(ProviderCapabilitySchema),
}).meta({ id: "CapabilityReport" });

/** What is known of a harness's binary (see {@linkcode ToolCapabilitySchema}). */
export interface ToolCapability {
  /** The command as configured (a name on PATH or a path). */
  command: string;
  /** Whether the binary was found. */
  installed: boolean;
  /** Where the binary was found. */
  path: string | null;
  /** The version its version flag printed. */
  version: string | null;
  /** How its version flag went. */
  probe: "answered" | "failed" | "timed_out" | "probing" | "missing";
  /** What the probe said, for people. */
  detail: string;
  /** The version svc is tested with. */
  tested_version: string | null;
  /** Whether the version is the tested one; null when the version is unknown. */
  tested: boolean | null;
}

/** Whether a provider's credentials or endpoint answer (see {@linkcode CredentialsCapabilitySchema}). */
export interface CredentialsCapability {
  /** What the check found. */
  state: "ok" | "refused" | "missing" | "unreachable" | "failed" | "unchecked" | "not_needed";
  /** The variables looked at, by NAME only. */
  key_env: string[];
  /** The NAME of the variable that is set. */
  key_found: string | null;
  /** The URL probed, without credentials or query. */
  endpoint: string | null;
  /** What the check said, for people. */
  detail: string;
}

/** One provider of the report. */
export interface ProviderCapability {
  /** The provider's name. */
  name: string;
  /** The configuration's type. */
  type: string;
  /** The kind of provider. */
  kind: "fake" | "harness" | "api";
  /** The binary; null for providers without one. */
  tool: ToolCapability | null;
  /** Whether its credentials or endpoint answer. */
  credentials: CredentialsCapability;
  /** The levels its calls can run at. */
  sandbox_levels: ("read-only" | "write" | "full")[];
  /** Why a level is missing, or what svc changes so that the levels work; null when nothing. */
  sandbox_detail: string | null;
}

/** The capability report. */
export interface CapabilityReport {
  /** When it was made, ISO 8601. */
  generated_at: string;
  /** How long it took. */
  took_ms: number;
  /** The bound the report is made within. */
  deadline_ms: number;
  /** The configuration's policy for the full level. */
  sandbox_full: "deny" | "allow" | "ask";
  /** Every configured provider. */
  providers: ProviderCapability[];
}
type _CapabilityReportMatches = Assert<
  SameType<CapabilityReport, z.infer<typeof CapabilityReportSchema>>
>;
