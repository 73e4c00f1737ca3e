import * as z from "zod";

/** Most ids one mark-read names (the ledger's bound: `NOTIFICATION_LIMITS.ids`). */
export const MARK_READ_IDS = 100;

const NotificationIdSchema = z.string().max(64, "must be at most 64 characters").regex(
  /^ntf_[0-9a-f]{12}_\d{1,15}$/,
  "must be a notification id like ntf_0123456789ab_42",
);

/**
 * What `POST /api/notifications/read` (and `svc notifications read`) marks read: some ids, every
 * notification up to one id (itself included), or all of them. Ids of other owners mark nothing.
 */
export const MarkReadRequestSchema = z.union([
  z.strictObject({
    ids: z.array(NotificationIdSchema).min(1).max(MARK_READ_IDS).meta({
      description: `notification ids, 1 to ${MARK_READ_IDS}`,
    }),
  }),
  z.strictObject({
    up_to: NotificationIdSchema.meta({
      description: "every notification up to this one (itself included)",
    }),
  }),
  z.strictObject({ all: z.literal(true).meta({ description: "every notification" }) }),
]).meta({ id: "MarkReadRequest" });

/** A parsed mark-read request. */
export type MarkReadRequest = z.infer<typeof MarkReadRequestSchema>;
