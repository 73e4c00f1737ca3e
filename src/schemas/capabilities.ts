/**
 * The capability report (`GET /api/capabilities`, `svc doctor --json`): per configured provider,
 * its tool and version, its credentials or endpoint, and the sandbox levels it supports. One
 * shape for the dashboard and the command line; it never holds a secret, only variable names.
 * @module
 */
import { z } from "zod";

/** What is known of a harness's binary. */
export const ToolCapabilitySchema = z.object({
  command: z.string().meta({ description: "the command as configured (a name on PATH or a path)" }),
  installed: z.boolean(),
  path: z.string().nullable().meta({ description: "where the binary was found" }),
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

/** The capability report. */
export type CapabilityReport = z.infer<typeof CapabilityReportSchema>;
/** One provider of the capability report. */
export type ProviderCapability = z.infer<typeof ProviderCapabilitySchema>;
/** A harness's binary in the capability report. */
export type ToolCapability = z.infer<typeof ToolCapabilitySchema>;
/** A provider's credentials in the capability report. */
export type CredentialsCapability = z.infer<typeof CredentialsCapabilitySchema>;
