import type { Caller, MarkRead, NotificationLedger, NotificationPage } from "../ledger/mod.ts";
import { NOTIFICATION_LIMITS } from "../ledger/mod.ts";

/** Options of {@linkcode Notifications.list}. */
export interface NotificationListOptions {
  /** Most notifications in the page. @default 50 */
  limit?: number;
  /** The `next_cursor` of the previous page. */
  cursor?: string;
  /** Only unread ones. @default false */
  unread?: boolean;
}

/**
 * An owner's notifications: runs and tasks that ended badly or hit a budget or a limit, and
 * calls waiting for a person, with read state. Every caller, an administrator too, sees and
 * marks only its own owner's: a notification is addressed to one owner, and another owner's
 * read state is not an administrator's to change (it sees every run through the run routes).
 */
export class Notifications {
  readonly #ledger: NotificationLedger;

  /** The notifications of a ledger. */
  constructor(ledger: NotificationLedger) {
    this.#ledger = ledger;
  }

  /** A page of the caller's notifications, newest first, with the unread count. */
  list(caller: Caller, options: NotificationListOptions = {}): Promise<NotificationPage> {
    return this.#ledger.listNotifications(caller.owner, {
      limit: Math.min(options.limit ?? 50, NOTIFICATION_LIMITS.page),
      ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
      ...(options.unread ? { unread: true } : {}),
    });
  }

  /** How many of the caller's notifications are unread. */
  unread(caller: Caller): Promise<number> {
    return this.#ledger.unreadNotifications(caller.owner);
  }

  /** Marks the caller's notifications read: some ids, everything up to one, or all. */
  markRead(caller: Caller, what: MarkRead): Promise<{ marked: number; unread: number }> {
    return this.#ledger.markNotificationsRead(caller.owner, what);
  }
}
