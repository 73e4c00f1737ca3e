/**
 * The names of the variables a harness process gets from the host: the base set and each tool's
 * own. Data only, so that the launcher can grant them without loading the dispatcher.
 * @module
 */

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
