import * as z from "zod";
import { AgentOptionsSchema, SandboxLevelSchema } from "./agent_options.ts";
import { SessionNameSchema } from "./session_name.ts";

/**
 * A direct dispatch (`svc dispatch`, `POST /api/dispatch`, the tool protocol): one prompt with
 * the options of `agent()`, run as an asynchronous task.
 */
export const DispatchRequestSchema = AgentOptionsSchema.safeExtend({
  prompt: z.string().min(1, "must not be empty"),
  /** Highest sandbox level the call may get; its own ask when absent. */
  sandbox_max: SandboxLevelSchema.optional(),
  /** Wall-clock limit of the task in seconds. Default 1800. */
  timeout: z.number().int("must be whole seconds").positive().max(7 * 24 * 3600).default(1800),
  /** Send the call to the fake provider (no quota used). */
  fake_dispatch: z.boolean().default(false),
  /** Attempts of a schema call whose answer fails validation (first try included). */
  schema_attempts: z.number().int().min(1).max(10).default(3),
});

/** A validated dispatch request. */
export type DispatchTaskRequest = z.infer<typeof DispatchRequestSchema>;

/** Creating a session: which provider (or profile) it talks to, and a name to find it by. */
export const SessionCreateSchema = z.strictObject({
  name: SessionNameSchema.optional(),
  provider: z.string().min(1).optional(),
  profile: z.string().min(1).optional(),
});

/** A validated session creation. */
export type SessionCreateRequest = z.infer<typeof SessionCreateSchema>;
