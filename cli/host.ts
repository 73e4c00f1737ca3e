import { type Caller, callerOf } from "../src/services/mod.ts";
import { openServices, type Services, type ServicesOptions } from "../src/services/mod.ts";
import { platform } from "../src/platform/mod.ts";

/** The services one command-line invocation works with, and who it acts as. */
export interface Host extends Services {
  /** The local user: owner `local`, or `SVC_OWNER` when set. */
  readonly caller: Caller;
}

/** What a command chooses of its services. */
export type HostOptions = Pick<ServicesOptions, "earlyGuest">;

/** The owner the command line acts as: `SVC_OWNER`, else `local`. */
export function cliCaller(): Caller {
  return callerOf(platform().env("SVC_OWNER") ?? "local");
}

/**
 * Opens the services of `SVC_HOME` for one command; `options.earlyGuest` is the guest a run
 * started before them (`startEarlyGuest`).
 */
export async function openHost(options: HostOptions = {}): Promise<Host> {
  const caller = cliCaller();
  const services = await openServices(options);
  return Object.assign(services, { caller });
}
