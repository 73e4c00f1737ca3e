/**
 * Codex's sandbox helper. On Linux, Codex's `read-only` and `workspace-write` sandboxes run each
 * shell command through bubblewrap, which starts `codex-linux-sandbox`: a link to Codex itself
 * that Codex puts on its PATH at start, in `$CODEX_HOME/tmp/arg0/`. Codex refuses to make it when
 * its home lies under the temp directory (codex-rs/arg0: `codex_home.starts_with(temp_dir())`,
 * where `temp_dir()` is `TMPDIR`, else `/tmp`, taken as it is, and `codex_home` is `CODEX_HOME`
 * made canonical, else `$HOME/.codex`), warns "Refusing to create helper binaries under temporary
 * dir" and goes on, and then every shell command of those sandboxes fails with
 * `bwrap: execvp codex-linux-sandbox`. The check compares the two paths and nothing else, so svc
 * keeps the user's `CODEX_HOME` (its config, login and sessions) and gives Codex a temp directory
 * of svc's own instead, `<state dir>/tmp`, which does not hold it. When the provider's own `env`
 * fixes `TMPDIR`, svc leaves the operator's choice alone and refuses those sandboxes up front.
 * @module
 */
import { SvcError } from "../../errors/mod.ts";
import { joinPath, platform } from "../../platform/mod.ts";
import type { SandboxLevel } from "../../schemas/mod.ts";

/** The sandbox levels whose shell commands need the helper (`full` runs them unsandboxed). */
export const CODEX_HELPER_LEVELS: readonly SandboxLevel[] = ["read-only", "write"];

/** What svc does about Codex's helper for one environment. */
export type CodexHelperPlan =
  /** CODEX_HOME is not under the temp directory (or is unknown): nothing to do. */
  | { kind: "fine" }
  /** svc gives Codex `TMPDIR=tmpdir`, a directory that does not hold CODEX_HOME. */
  | { kind: "moved"; codexHome: string; tempDir: string; tmpdir: string }
  /** The helper cannot work: `reason` says why, for people. */
  | { kind: "refused"; codexHome: string; tempDir: string; reason: string };

/** A path's components as Rust's `Path::components` has them: `/` first, `.` and empty left out. */
function components(path: string): string[] {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  return path.startsWith("/") ? ["/", ...parts] : parts;
}

/** Rust's `Path::starts_with`: whether `base`'s components begin `path`'s. */
export function pathStartsWith(path: string, base: string): boolean {
  const [p, b] = [components(path), components(base)];
  return b.length <= p.length && b.every((part, i) => p[i] === part);
}

/** Options of {@linkcode codexHelperPlan}. */
export interface CodexHelperOptions {
  /** Whether the provider's configured `env` sets `TMPDIR` (svc then leaves it). */
  fixedTmpdir: boolean;
  /** The provider's directory of svc's files; the temp directory svc gives Codex is under it. */
  stateDir: string;
  /** `CODEX_HOME` made canonical, as Codex does; the path as it is when absent. */
  canonicalHome?: string;
}

/** Codex's home for `env`, as Codex finds it; undefined when neither variable is set. */
function homeOf(env: Readonly<Record<string, string>>, canonical?: string): string | undefined {
  if (env.CODEX_HOME) return canonical ?? env.CODEX_HOME;
  return env.HOME ? joinPath(env.HOME, ".codex") : undefined;
}

/** Why the helper cannot work, naming both paths and what to change. */
function refusal(codexHome: string, tempDir: string, cause: string): string {
  return `Codex's sandbox helper (codex-linux-sandbox) cannot work: CODEX_HOME ${codexHome} lies under the temp directory ${tempDir} (TMPDIR), where Codex refuses to create it, so every shell command of sandbox read-only or write would fail; ${cause}`;
}

/** What svc must do so that Codex's helper works in `env`; computes, writes nothing. */
export function codexHelperPlan(
  env: Readonly<Record<string, string>>,
  options: CodexHelperOptions,
): CodexHelperPlan {
  const codexHome = homeOf(env, options.canonicalHome);
  const tempDir = env.TMPDIR ?? "/tmp";
  if (codexHome === undefined || !pathStartsWith(codexHome, tempDir)) return { kind: "fine" };
  if (options.fixedTmpdir) {
    return {
      kind: "refused",
      codexHome,
      tempDir,
      reason: refusal(
        codexHome,
        tempDir,
        "the provider's env sets TMPDIR, so svc leaves it: set TMPDIR or CODEX_HOME there so that CODEX_HOME is not under TMPDIR",
      ),
    };
  }
  const tmpdir = joinPath(options.stateDir, "tmp");
  if (pathStartsWith(codexHome, tmpdir)) {
    return {
      kind: "refused",
      codexHome,
      tempDir,
      reason: refusal(codexHome, tempDir, `and it lies under svc's own ${tmpdir} too: move it`),
    };
  }
  return { kind: "moved", codexHome, tempDir, tmpdir };
}

/** {@linkcode codexHelperPlan} with `CODEX_HOME` made canonical first, as Codex does. */
async function resolvedPlan(
  env: Readonly<Record<string, string>>,
  options: Omit<CodexHelperOptions, "canonicalHome">,
): Promise<CodexHelperPlan> {
  const canonicalHome = env.CODEX_HOME
    ? await platform().realPath(env.CODEX_HOME).catch(() => undefined)
    : undefined;
  return codexHelperPlan(env, {
    ...options,
    ...(canonicalHome !== undefined ? { canonicalHome } : {}),
  });
}

/**
 * Before a Codex call: gives Codex svc's temp directory when its home lies under the temp
 * directory (creating it, owner only), or refuses a call whose sandbox needs the helper when
 * that cannot be done. A `full` call needs no helper and runs as configured.
 */
export async function prepareCodexHelper(
  call: { provider: string; sandbox: SandboxLevel; stateDir?: string },
  env: Record<string, string>,
  fixedTmpdir: boolean,
): Promise<void> {
  const plan = await resolvedPlan(env, { fixedTmpdir, stateDir: call.stateDir ?? "" });
  if (plan.kind === "fine") return;
  if (plan.kind === "refused") {
    if (!CODEX_HELPER_LEVELS.includes(call.sandbox)) return;
    throw new SvcError("unavailable", `Cannot dispatch to ${call.provider}: ${plan.reason}`);
  }
  await platform().mkdir(plan.tmpdir);
  env.TMPDIR = plan.tmpdir;
}

/** What the capability report says of a Codex provider's sandbox levels. */
export interface CodexHelperReport {
  /** The levels its calls can run at. */
  levels: SandboxLevel[];
  /** What svc does, or why read-only and write cannot run; null when nothing needs saying. */
  detail: string | null;
}

/**
 * The sandbox levels of a Codex provider whose processes get `env` (the configuration's `env`
 * over the host's variables): all three, with a note when svc gives Codex its own temp
 * directory; only `full` when the helper cannot work.
 */
export async function codexHelperReport(
  env: Readonly<Record<string, string>>,
  options: Omit<CodexHelperOptions, "canonicalHome">,
): Promise<CodexHelperReport> {
  const plan = await resolvedPlan(env, options);
  switch (plan.kind) {
    case "fine":
      return { levels: ["read-only", "write", "full"], detail: null };
    case "moved":
      return {
        levels: ["read-only", "write", "full"],
        detail:
          `CODEX_HOME ${plan.codexHome} lies under the temp directory ${plan.tempDir} (TMPDIR), where Codex will not create its sandbox helper: svc runs Codex with TMPDIR=${plan.tmpdir}`,
      };
    case "refused":
      return { levels: ["full"], detail: plan.reason };
  }
}
