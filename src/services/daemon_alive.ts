import type { HostLedger } from "../ledger/mod.ts";

/** How long one answer to "is a daemon alive?" is reused, in ms. */
const DAEMON_CHECK_MS = 1000;

const checks = new WeakMap<HostLedger, { at: number; alive: Promise<boolean> }>();

/** Whether a live daemon shares this ledger: its queue worker will claim queued work. */
export function daemonAlive(ledger: HostLedger): Promise<boolean> {
  const now = Date.now();
  const cached = checks.get(ledger);
  if (cached && now - cached.at < DAEMON_CHECK_MS) return cached.alive;
  const alive = ledger.listHosts().then(
    (hosts) => hosts.some((host) => host.alive && host.role === "daemon"),
    () => false,
  );
  checks.set(ledger, { at: now, alive });
  return alive;
}
