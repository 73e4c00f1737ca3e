import type { Caller } from "../services/mod.ts";

/** What the middleware hands to the routes: who asks, as its token says. */
export interface DashboardEnv {
  /** Per-request values. */
  Variables: {
    /** The caller the request's token (or the unauthenticated default) acts as. */
    caller: Caller;
  };
}
