/**
 * The macOS deny-list sandbox of local guests: a `sandbox-exec` profile that allows what a
 * permissionless Deno process needs and denies reading or writing the places secrets live
 * (credential and configuration directories, secret files) and any network. A mitigation,
 * not a boundary (the specification's words): the guest still runs as the user.
 * @module
 */

/**
 * Folders and files under the user's home that hold credentials or their configuration: SSH,
 * cloud CLIs, package registries, container and cluster tools, git, shell histories, and the
 * coding agents' own logins.
 */
export const SENSITIVE_HOME_PATHS: readonly string[] = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".config",
  ".kube",
  ".docker",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".gitconfig",
  ".claude",
  ".claude.json",
  ".codex",
  ".gemini",
  ".local/share/opencode",
  ".bash_history",
  ".zsh_history",
  "Library/Keychains",
  "Library/Application Support",
  "Library/Cookies",
];

/** File names that hold secrets wherever they are (`.env`, private keys). */
const SENSITIVE_FILE_PATTERNS: readonly string[] = [
  "/\\.env(\\.[^/]*)?$",
  "/id_(rsa|dsa|ecdsa|ed25519)$",
  "\\.pem$",
  "\\.key$",
];

/** A string literal of the profile language: `"` and `\` escaped, no control characters. */
function quoted(text: string): string {
  // deno-lint-ignore no-control-regex -- control characters never belong in a path here
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`).replace(/[\x00-\x1f\x7f]/g, "")}"`;
}

/** Options of {@linkcode macosDenyProfile}. */
export interface MacosProfileOptions {
  /** The user's home directory. */
  home: string;
  /** svc's data directory (`SVC_HOME`): it holds the dashboard's token and every run. */
  svcHome: string;
  /**
   * Paths the guest must read although they lie under a denied one: its own scratch directory
   * (under `SVC_HOME`) and the bootstrap's folder. The profile's last matching rule wins.
   */
  readable?: readonly string[];
}

/**
 * The `sandbox-exec` profile of a local guest: allow by default (Deno needs its binary, its
 * libraries and the guest's files), then deny the sensitive paths and the network.
 */
export function macosDenyProfile(options: MacosProfileOptions): string {
  const home = options.home.replace(/\/+$/, "");
  const paths = [...SENSITIVE_HOME_PATHS.map((path) => `${home}/${path}`), options.svcHome];
  return [
    "(version 1)",
    "(allow default)",
    "(deny network*)",
    "(deny file-read* file-write*",
    ...paths.map((path) => `  (subpath ${quoted(path)})`),
    ...SENSITIVE_FILE_PATTERNS.map((pattern) => `  (regex #${quoted(pattern)})`),
    ")",
    ...(options.readable ?? []).map((path) => `(allow file-read* (subpath ${quoted(path)}))`),
    "",
  ].join("\n");
}
