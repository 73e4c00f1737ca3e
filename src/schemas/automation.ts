import * as z from "zod";
import { Cron } from "croner";
import { DispatchRequestSchema } from "./dispatch.ts";
import { boundedJson, type JsonValue } from "./json.ts";
import { describeIssue } from "./issues.ts";
import type { Assert, SameType } from "./same_type.ts";

/** Longest cron expression accepted. */
const CRON_LIMIT = 120;
/** Largest `args` of an automation, in bytes of JSON: it is kept in one ledger value. */
export const AUTOMATION_ARGS_BYTES = 16 * 1024;

const nameSchema = z.string().min(1).max(64).regex(
  /^[A-Za-z0-9][A-Za-z0-9_-]*$/,
  "must be letters, digits, '_' or '-', starting with a letter or digit",
);

/** Why a cron expression (five or six fields) cannot be used, or undefined when it can. */
export function cronProblem(cron: string, timezone?: string): string | undefined {
  if (cron.length > CRON_LIMIT) return `must be at most ${CRON_LIMIT} characters`;
  if (cron.trim().split(/\s+/).length > 6) return "must have five or six fields";
  try {
    const schedule = new Cron(cron, { paused: true, ...(timezone ? { timezone } : {}) });
    if (schedule.nextRun() === null) return "never fires";
  } catch (error) {
    const text = error instanceof Error ? error.message : "it cannot be read";
    return `is not a cron expression (${text.replace(/^CronPattern: /, "").slice(0, 200)})`;
  }
  return undefined;
}

function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en", { timeZone: timezone });
    return undefined;
  } catch {
    return "is not an IANA time zone (such as Europe/Paris)";
  }
}

/**
 * What an automation does: `workflow` names a saved workflow run with `args`, or `dispatch` is
 * a dispatch request (`POST /api/dispatch`'s body). The fields every form shares.
 */
const automationFields = {
  cron: z.string().min(1).meta({ description: "cron expression: five or six fields" }),
  timezone: z.string().min(1).max(64).optional().meta({
    description: "IANA time zone the expression is read in; default UTC",
  }),
  workflow: nameSchema.optional().meta({ description: "the saved workflow to run" }),
  args: boundedJson({ maxBytes: AUTOMATION_ARGS_BYTES }).optional(),
  fake_dispatch: z.boolean().optional(),
  dispatch: z.record(z.string(), boundedJson()).optional().meta({
    description: "a dispatch request (prompt and options), instead of `workflow`",
  }),
};

/** The schedule and action every automation has. */
export interface AutomationConfigFields {
  /** The cron expression (five or six fields). */
  cron: string;
  /** The IANA time zone it is read in; UTC when absent. */
  timezone?: string | undefined;
  /** The saved workflow to run. */
  workflow?: string | undefined;
  /** The workflow's `args`. */
  args?: JsonValue | undefined;
  /** Send the work to the fake provider. */
  fake_dispatch?: boolean | undefined;
  /** A dispatch request, instead of `workflow`. */
  dispatch?: Record<string, JsonValue> | undefined;
}

/** Checks the cron, the time zone and that exactly one action is given. */
function refineAction(value: AutomationConfigFields, ctx: z.RefinementCtx): void {
  const zone = value.timezone === undefined ? undefined : timezoneProblem(value.timezone);
  if (zone) ctx.addIssue({ code: "custom", path: ["timezone"], message: zone });
  const cron = cronProblem(value.cron, zone ? undefined : value.timezone);
  if (cron) ctx.addIssue({ code: "custom", path: ["cron"], message: cron });
  if ((value.workflow === undefined) === (value.dispatch === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["workflow"],
      message: "give exactly one of 'workflow' and 'dispatch'",
    });
  }
  if (value.dispatch !== undefined) {
    if (value.args !== undefined) {
      ctx.addIssue({ code: "custom", path: ["args"], message: "goes with 'workflow' only" });
    }
    const parsed = DispatchRequestSchema.safeParse(value.dispatch);
    if (!parsed.success) {
      ctx.addIssue({
        code: "custom",
        path: ["dispatch"],
        message: `is not a dispatch request: ${describeIssue(parsed.error)}`,
      });
    }
  }
}

/** The body of `POST /api/automations`: a named schedule of a workflow or a dispatch. */
export const AutomationRequestSchema = z.strictObject({
  name: nameSchema,
  ...automationFields,
}).superRefine(refineAction);

/** A validated automation request: its name, schedule and action. */
export interface AutomationRequest extends AutomationConfigFields {
  /** The automation's name, unique per owner. */
  name: string;
}
type _RequestMatches = Assert<SameType<AutomationRequest, z.infer<typeof AutomationRequestSchema>>>;

/** An automation of the configuration file (`automations.<name>`): the request and its owner. */
export const AutomationConfigSchema = z.strictObject({
  ...automationFields,
  owner: z.string().min(1).max(128).optional().meta({
    description: "whose work it starts; default `local`",
  }),
}).superRefine(refineAction);

/** A validated automation of the configuration file. */
export interface AutomationConfig extends AutomationConfigFields {
  /** Whose work it starts; default `local`. */
  owner?: string | undefined;
}
type _ConfigMatches = Assert<SameType<AutomationConfig, z.infer<typeof AutomationConfigSchema>>>;
