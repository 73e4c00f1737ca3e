/**
 * The authenticated caller as the A2A SDK sees a user: the request handler hands it to the
 * task store and the executor inside each call's context, so both act as the token's owner.
 * @module
 */
import type { ServerCallContext, User } from "@a2a-js/sdk/server";
import { SvcError } from "../errors/mod.ts";
import type { Caller } from "../services/mod.ts";

/** A caller of svc as an A2A `User`: its name is the owner the token is bound to. */
export class CallerUser implements User {
  /** The caller every task of the request belongs to. */
  readonly caller: Caller;

  /** The user of `caller`. */
  constructor(caller: Caller) {
    this.caller = caller;
  }

  /** Always: the route only lets authenticated requests through. */
  get isAuthenticated(): boolean {
    return true;
  }

  /** The owner. */
  get userName(): string {
    return this.caller.owner;
  }
}

/**
 * The caller of a call's context. Every context the server builds carries one; a context
 * without one is a bug, refused rather than served as nobody (or everybody).
 */
export function callerOfContext(context: ServerCallContext | undefined): Caller {
  const user = context?.user;
  if (user instanceof CallerUser) return user.caller;
  throw new SvcError("internal", "Cannot serve the A2A call: it carries no caller");
}
