import { SvcError } from "../errors/mod.ts";

/**
 * Who asks: every service call that reads or changes runs, tasks, sessions, history or costs
 * takes one. A caller sees and changes what its `owner` owns; an administrator (`admin: true`)
 * sees everyone's. What a caller creates is recorded under its `owner`.
 */
export interface Caller {
  /** Who the caller is: records it creates are this owner's, and it sees this owner's. */
  readonly owner: string;
  /** An administrator sees and changes every owner's records. */
  readonly admin?: boolean;
  /**
   * The caller came over a network or a tool protocol (the dashboard API, MCP, A2A, an
   * automation such a caller created), not from the operator at the terminal: every path it
   * names goes through the workspace policy, every run it starts through admission control.
   */
  readonly remote?: boolean;
  /**
   * The caller is the operator: a token bound to no owner (or a request with authentication
   * off). Marked apart from the owner's name, since a token may be bound to any name, `local`
   * included, and the name of the default owner gives no right over the host.
   */
  readonly operator?: boolean;
}

/** Longest owner name: owners come from tokens and flags, and end up in ledger keys. */
export const OWNER_LIMIT = 128;

/**
 * A caller for `owner`, checked: an owner is 1 to 128 characters without control characters,
 * since it becomes part of ledger keys and is printed.
 */
export function callerOf(
  owner: string,
  options: { admin?: boolean; remote?: boolean; operator?: boolean } = {},
): Caller {
  // deno-lint-ignore no-control-regex
  if (owner.length === 0 || owner.length > OWNER_LIMIT || /[\u0000-\u001f\u007f]/.test(owner)) {
    throw new SvcError(
      "invalid_argument",
      `Cannot act as owner ${
        JSON.stringify(owner.slice(0, 40))
      }: an owner is 1 to ${OWNER_LIMIT} characters without control characters`,
    );
  }
  return {
    owner,
    ...(options.admin ? { admin: true } : {}),
    ...(options.remote ? { remote: true } : {}),
    ...(options.operator ? { operator: true } : {}),
  };
}

/** Whether `caller` may see and change a record of `owner`. */
export function mayAccess(caller: Caller, owner: string): boolean {
  return caller.admin === true || caller.owner === owner;
}

/** The owner a listing is limited to: the caller's, or none for an administrator. */
export function ownerScope(caller: Caller): string | undefined {
  return caller.admin === true ? undefined : caller.owner;
}
