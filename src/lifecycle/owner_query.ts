import { type Caller, ownerScope } from "../ledger/mod.ts";

/**
 * A listing's query for `caller`: its own records (everyone's for an administrator), with the
 * options it gave; options left undefined are dropped, so that the ledger applies its defaults.
 */
export function ownerQuery<T extends object>(caller: Caller, options: T): T & { owner?: string } {
  const owner = ownerScope(caller);
  const given = Object.entries(options).filter(([_, value]) => value !== undefined);
  return Object.fromEntries([
    ...(owner !== undefined ? [["owner", owner]] : []),
    ...given,
  ]) as T & { owner?: string };
}
