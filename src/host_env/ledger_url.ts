import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";

/**
 * The shared ledger's database (`SVC_LEDGER_URL`, a `postgres://` URL), or undefined: the
 * ledger is then the KV files under `SVC_HOME`, this machine's alone.
 */
export function ledgerUrl(): string | undefined {
  const url = platform().env("SVC_LEDGER_URL");
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SvcError("invalid_argument", "Cannot use SVC_LEDGER_URL: it is not a URL");
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new SvcError(
      "invalid_argument",
      `Cannot use SVC_LEDGER_URL: its scheme is '${
        parsed.protocol.slice(0, 20)
      }', svc knows postgres:// only`,
    );
  }
  return url;
}

/** The `host:port` of the ledger's database, for the host's net grant; undefined without one. */
export function ledgerNetGrant(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const { hostname, port } = new URL(url);
  // A Unix socket (`?host=/dir`) needs no net grant: read and write cover it.
  if (!hostname) return undefined;
  return `${hostname}:${port || "5432"}`;
}

/**
 * The variables the Postgres client (npm `postgres`) may read when it connects: the libpq
 * names of settings the URL leaves out, and the user name's fallbacks. The host is granted
 * them with `SVC_LEDGER_URL`, so that connecting never fails on a permission.
 */
export const LEDGER_ENV_VARS: readonly string[] = [
  "SVC_LEDGER_URL",
  ...[
    "HOST",
    "PORT",
    "USER",
    "USERNAME",
    "PASSWORD",
    "DATABASE",
    "APPNAME",
    "TARGETSESSIONATTRS",
    "SSL",
    "SSLNEGOTIATION",
    "MAX_LIFETIME",
    "MAX_PIPELINE",
    "BACKOFF",
    "KEEP_ALIVE",
    "PREPARE",
    "DEBUG",
    "FETCH_TYPES",
    "PUBLICATIONS",
    "TARGET_SESSION_ATTRS",
  ].map((name) => `PG${name}`),
  "USER",
  "LOGNAME",
  "USERNAME",
];
