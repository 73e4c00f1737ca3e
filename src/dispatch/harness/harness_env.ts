/**
 * The environment of a harness process: never the host's whole environment (which holds every
 * other provider's key and the user's cloud credentials), but an allow-list: what any tool needs
 * to run, the provider's own key variables, and fixed values from the configuration.
 * @module
 */
import { SvcError } from "../../errors/mod.ts";
import { platform } from "../../platform/mod.ts";

/** The locale variables, by name: a grant cannot be read as a pattern, so each is listed. */
export const LOCALE_ENV: readonly string[] = [
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "LC_COLLATE",
  "LC_MESSAGES",
  "LC_MONETARY",
  "LC_NUMERIC",
  "LC_TIME",
  "LC_ADDRESS",
  "LC_IDENTIFICATION",
  "LC_MEASUREMENT",
  "LC_NAME",
  "LC_PAPER",
  "LC_TELEPHONE",
];

/**
 * What every harness gets from the host when it is set: how to find programs and the user's
 * files, the locale, the terminal and time zone, the XDG directories (where the tools keep their
 * logins and sessions), and the proxy and CA settings without which a tool cannot reach its API
 * on a proxied network. No credential of any provider is among them.
 */
export const HARNESS_BASE_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "TMPDIR",
  ...LOCALE_ENV,
  "TERM",
  "COLORTERM",
  "NO_COLOR",
  "TZ",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_CACHE_HOME",
  "XDG_STATE_HOME",
  "XDG_RUNTIME_DIR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
];

/**
 * Each tool's own variables, passed through by default: its API keys and where it keeps its
 * login. A configuration's `pass_env` replaces this list.
 */
export const HARNESS_KEY_ENV: Record<"claude" | "codex" | "gemini" | "opencode", string[]> = {
  claude: ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"],
  codex: ["OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_HOME"],
  gemini: [
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
  ],
  // opencode keeps the logins of `opencode auth login` in its data directory; a key variable of
  // the model's provider is named in `pass_env`.
  opencode: ["OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR"],
};

/** The environment of one harness process, and the values an error message must never show. */
export interface HarnessEnv {
  env: Record<string, string>;
  /** The values of the key variables and of the configured fixed values. */
  secrets: string[];
}

/** Reads a variable; a refused read is `refused` (the grant it needs), not an exception. */
function read(name: string): { value?: string; refused?: string } {
  try {
    const value = platform().env(name);
    return value === undefined ? {} : { value };
  } catch (error) {
    const grant = platform().missingGrant(error);
    if (grant) return { refused: grant };
    throw error;
  }
}

/**
 * Builds a harness's environment: {@linkcode HARNESS_BASE_ENV} where set (skipped where the
 * host may not read it), the key variables `pass` names (a refused read fails the call: the
 * tool would otherwise report a confusing "not authenticated"), then the fixed values.
 */
export function harnessEnv(
  provider: string,
  options: { pass: readonly string[]; fixed?: Readonly<Record<string, string>> },
): HarnessEnv {
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  for (const name of HARNESS_BASE_ENV) {
    const { value } = read(name);
    if (value !== undefined) env[name] = value;
  }
  for (const name of options.pass) {
    const { value, refused } = read(name);
    if (refused) {
      throw new SvcError("provider_failed", `Cannot dispatch to ${provider}: svc needs ${refused}`);
    }
    if (value === undefined) continue;
    env[name] = value;
    secrets.push(value);
  }
  for (const [name, value] of Object.entries(options.fixed ?? {})) {
    env[name] = value;
    secrets.push(value);
  }
  return { env, secrets };
}
