import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";

/** Longest error of a refused configuration that is kept and shown, in characters. */
export const CONFIG_ERROR_CHARS = 600;

/**
 * The configuration a host runs with, as its operator sees it (`GET /api/config`,
 * `POST /api/config/reload`, `config` of `/api/status`): when it was read, from where, and why
 * the last attempt to read it again was refused, if it was.
 */
export const ConfigStateSchema = z.object({
  loaded_at: z.string().meta({
    description: "when the configuration in effect was read (ISO 8601)",
  }),
  source: z.string().nullable().meta({
    description: "the file it was read from; null for the embedded default (no config.json)",
  }),
  checked_at: z.string().meta({
    description: "when the file was last read, whether or not it was taken (ISO 8601)",
  }),
  reloads: z.number().int().meta({ description: "reloads taken since the host started" }),
  error: z.string().max(CONFIG_ERROR_CHARS).optional().meta({
    description:
      "why the file as it is now was refused (the file, the key, what is wrong); the configuration in effect is the earlier one. Absent when the file was taken.",
  }),
  restart_needed: z.array(z.string()).meta({
    description:
      "keys the file changes that take effect only when the host starts again (progress, daemon.concurrency, ...)",
  }),
}).meta({ id: "ConfigState" });

/** The configuration a host runs with, for its operator (see {@linkcode ConfigStateSchema}). */
export interface ConfigState {
  /** When the configuration in effect was read (ISO 8601). */
  loaded_at: string;
  /** The file it was read from; null for the embedded default. */
  source: string | null;
  /** When the file was last read, whether or not it was taken (ISO 8601). */
  checked_at: string;
  /** Reloads taken since the host started. */
  reloads: number;
  /** Why the file as it is now was refused; absent when it was taken. */
  error?: string | undefined;
  /** Keys the file changes that take effect only when the host starts again. */
  restart_needed: string[];
}
type _ConfigStateMatches = Assert<SameType<ConfigState, z.infer<typeof ConfigStateSchema>>>;
