/**
 * The dashboard's authentication settings: tokens and the owners they are bound to, whether
 * authentication and owners are required, and the origins allowed across sites. Read from the
 * `SVC_DASHBOARD_*` variables and from start-up flags or a token file, checked once.
 * @module
 */
import { callerOf } from "../services/mod.ts";
import { SvcError } from "../errors/mod.ts";

/** One accepted bearer token and the owner it acts as (none: `local`). */
export interface TokenBinding {
  /** The token. */
  token: string;
  /** The owner the token acts as; absent for a token bound to no owner. */
  owner?: string;
}

/** What the dashboard's `/api/*` layer enforces. */
export interface AuthSettings {
  /** Whether a valid token is needed (`SVC_DASHBOARD_AUTH_REQUIRED`). Default true. */
  required: boolean;
  /** Whether a token must be bound to an owner (`SVC_DASHBOARD_REQUIRE_OWNER`). Default false. */
  requireOwner: boolean;
  /** The accepted tokens. */
  tokens: TokenBinding[];
  /** Origins allowed to call the API from a page of another site (`SVC_DASHBOARD_ALLOWED_ORIGINS`). */
  allowedOrigins: string[];
}

/** The owner of requests that carry no owner: the command line's default owner too. */
export const LOCAL_OWNER = "local";

/** Shortest token accepted: a guessable token is no authentication. */
export const TOKEN_MIN_LENGTH = 16;
/** Longest token accepted. */
export const TOKEN_MAX_LENGTH = 512;

/** A token checked: long enough, and printable ASCII without spaces (it travels in a header). */
export function checkToken(token: string, where: string): string {
  if (token.length < TOKEN_MIN_LENGTH || token.length > TOKEN_MAX_LENGTH) {
    throw new SvcError(
      "invalid_argument",
      `Cannot use the token of ${where}: a token is ${TOKEN_MIN_LENGTH} to ${TOKEN_MAX_LENGTH} characters`,
    );
  }
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new SvcError(
      "invalid_argument",
      `Cannot use the token of ${where}: a token is printable ASCII without spaces`,
    );
  }
  return token;
}

function checkOwner(owner: string, where: string): string {
  try {
    return callerOf(owner).owner;
  } catch {
    throw new SvcError(
      "invalid_argument",
      `Cannot bind a token to the owner of ${where}: an owner is 1 to 128 characters without control characters`,
    );
  }
}

/**
 * Parses an `owner:token` pair (`SVC_DASHBOARD_OWNER_TOKENS`, `--owner-token`, a token file's
 * line). The owner ends at the first colon; the token may hold colons.
 */
export function parseOwnerToken(pair: string, where: string): TokenBinding {
  const colon = pair.indexOf(":");
  if (colon <= 0) {
    throw new SvcError(
      "invalid_argument",
      `Cannot read ${where}: each entry is owner:token`,
    );
  }
  return {
    owner: checkOwner(pair.slice(0, colon).trim(), where),
    token: checkToken(pair.slice(colon + 1).trim(), where),
  };
}

function parseBoolean(value: string | undefined, name: string, fallback: boolean): boolean {
  if (value === undefined || value.trim() === "") return fallback;
  const v = value.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(v)) return true;
  if (["false", "0", "no", "off"].includes(v)) return false;
  throw new SvcError("invalid_argument", `Cannot read ${name}: expected true or false`);
}

/** An allowed origin as browsers send it: scheme, host and port, no path. */
function parseOrigin(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SvcError(
      "invalid_argument",
      `Cannot read ${where}: '${
        value.slice(0, 100)
      }' is not an origin like https://board.example.com`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SvcError("invalid_argument", `Cannot read ${where}: an origin is http: or https:`);
  }
  return url.origin;
}

/** Reads a list variable: comma-separated, blanks ignored. */
function listOf(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * The settings the `SVC_DASHBOARD_*` variables give. `env` reads one variable (the platform's
 * `env` in the server, a map in tests). A token file and flags add to them ({@linkcode withTokens}).
 */
export function authSettingsFromEnv(env: (name: string) => string | undefined): AuthSettings {
  const tokens: TokenBinding[] = [];
  const main = env("SVC_DASHBOARD_API_TOKEN")?.trim();
  const mainOwner = env("SVC_DASHBOARD_API_TOKEN_OWNER")?.trim();
  if (main) {
    tokens.push({
      token: checkToken(main, "SVC_DASHBOARD_API_TOKEN"),
      ...(mainOwner ? { owner: checkOwner(mainOwner, "SVC_DASHBOARD_API_TOKEN_OWNER") } : {}),
    });
  }
  for (const pair of listOf(env("SVC_DASHBOARD_OWNER_TOKENS"))) {
    tokens.push(parseOwnerToken(pair, "SVC_DASHBOARD_OWNER_TOKENS"));
  }
  return {
    required: parseBoolean(env("SVC_DASHBOARD_AUTH_REQUIRED"), "SVC_DASHBOARD_AUTH_REQUIRED", true),
    requireOwner: parseBoolean(
      env("SVC_DASHBOARD_REQUIRE_OWNER"),
      "SVC_DASHBOARD_REQUIRE_OWNER",
      false,
    ),
    tokens,
    allowedOrigins: listOf(env("SVC_DASHBOARD_ALLOWED_ORIGINS")).map((o) =>
      parseOrigin(o, "SVC_DASHBOARD_ALLOWED_ORIGINS")
    ),
  };
}

/**
 * Reads a token file: one token per line, `token` (bound to no owner) or `owner:token`; blank
 * lines and lines starting with `#` are skipped. Tokens in a file stay out of process listings.
 */
export function parseTokenFile(text: string, path: string): TokenBinding[] {
  const out: TokenBinding[] = [];
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const where = `${path} line ${index + 1}`;
    out.push(
      line.includes(":") ? parseOwnerToken(line, where) : { token: checkToken(line, where) },
    );
  }
  return out;
}

/** `settings` with more tokens; a token given twice with different owners is refused. */
export function withTokens(settings: AuthSettings, more: readonly TokenBinding[]): AuthSettings {
  const tokens = [...settings.tokens];
  for (const binding of more) {
    const same = tokens.find((t) => t.token === binding.token);
    if (same && same.owner !== binding.owner) {
      throw new SvcError(
        "invalid_argument",
        "Cannot use the same token for two owners: give each owner a token of its own",
      );
    }
    if (!same) tokens.push(binding);
  }
  return { ...settings, tokens };
}

/** A new random token: 32 bytes from the system's random source, base64url (43 characters). */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
