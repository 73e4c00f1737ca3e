import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { within } from "./within.ts";

/** Who names a path: only whether it came from afar, and whose roots apply. */
export interface WorkspaceCaller {
  /** The owner whose roots apply. */
  readonly owner: string;
  /** A caller over a network or tool protocol; the operator at the terminal is not one. */
  readonly remote?: boolean;
}

/** Options of {@linkcode WorkspacePolicy}. */
export interface WorkspacePolicyOptions {
  /** Absolute directories each owner's remote requests may name, by owner. */
  roots?: Readonly<Record<string, readonly string[]>>;
  /** Roots of an owner that has none configured (`svc mcp` over stdio: its directory). */
  fallbackRoots?: readonly string[];
  /** Directories no remote request may name, be inside or contain: `SVC_HOME`, the board, the host's checkout. */
  forbidden?: readonly string[];
  /** The data directory: fresh scratch workdirs of remote requests are made in its `tmp/`. */
  home: string;
}

/** What {@linkcode WorkspacePolicy.workdirFor} checks. */
export interface WorkdirOptions {
  /** The field the path came in, for messages: `workdir`, `script_dir`. */
  what: string;
  /**
   * Without a path asked: make a fresh scratch directory (true, for a run's or task's
   * workdir) or return undefined (false, for optional folders such as `script_dir`).
   */
  scratch?: boolean;
  /**
   * The workdir of the run a request resumes (which the caller may see): a scratch workdir
   * that run was given is the caller's own, and accepted again.
   */
  inherited?: string;
}

/** Prefix of the scratch workdirs of remote requests; unmarked, so a daemon's run keeps it. */
const SCRATCH_PREFIX = "work-";

/**
 * How a scratch workdir is written in requests and statuses: by role, never by the host path
 * of `SVC_HOME` (which a remote caller must not learn). The host expands it where it works.
 */
const SCRATCH_REF = /^\$SVC_HOME\/tmp\/(work-[A-Za-z0-9_]{1,64})$/;

/**
 * Which directories a remote caller may make the host work in. The operator at the terminal
 * keeps a free choice; a remote caller names only directories inside its owner's roots
 * (checked on the real path, every symbolic link resolved) that neither are nor contain a
 * forbidden directory, and without roots gets a fresh scratch directory.
 */
export class WorkspacePolicy {
  #roots: Readonly<Record<string, readonly string[]>>;
  readonly #fallback: readonly string[];
  readonly #forbidden: readonly string[];
  readonly #scratchRoot: string;

  /** A policy over `options`; it reads nothing until asked. */
  constructor(options: WorkspacePolicyOptions) {
    this.#roots = options.roots ?? {};
    this.#fallback = options.fallbackRoots ?? [];
    this.#forbidden = options.forbidden ?? [];
    this.#scratchRoot = joinPath(options.home, "tmp");
  }

  /**
   * Takes reloaded roots (the configuration's `workspaces`): later requests are checked against
   * them; a run or dispatch already working stays where it is.
   */
  setRoots(roots: Readonly<Record<string, readonly string[]>>): void {
    this.#roots = roots;
  }

  /** The roots that apply to `owner`: its own, else the fallback. */
  rootsOf(owner: string): readonly string[] {
    const own = Object.hasOwn(this.#roots, owner) ? this.#roots[owner] : undefined;
    return own && own.length > 0 ? own : this.#fallback;
  }

  /**
   * The directory a request of `caller` works in. Not remote: `asked` at its real path (as
   * given when it does not exist). Remote: the
   * real path of `asked` once it passed the roots and forbidden directories (a `forbidden`
   * SvcError naming the asked path and the roots otherwise); without `asked`, a fresh scratch
   * directory when `options.scratch`.
   */
  async workdirFor(
    caller: WorkspaceCaller,
    asked: string | undefined,
    options: WorkdirOptions,
  ): Promise<string | undefined> {
    if (caller.remote !== true) {
      // The operator's own choice, at its real path (as given when it does not exist yet).
      return asked === undefined ? undefined : await platform().realPath(asked).catch(() => asked);
    }
    if (asked === undefined) return options.scratch ? await this.#makeScratch() : undefined;
    if (options.inherited !== undefined && asked === options.inherited) {
      const scratch = await this.#ownScratch(asked);
      if (scratch !== undefined) return scratch;
    }
    return await this.#check(caller.owner, asked, options.what);
  }

  async #check(owner: string, asked: string, what: string): Promise<string> {
    const shown = JSON.stringify(asked.slice(0, 200)).slice(1, -1);
    const roots = this.rootsOf(owner);
    const refuse = (why: string) =>
      new SvcError("forbidden", `Cannot use ${what} '${shown}': ${why}`);
    if (roots.length === 0) {
      throw refuse(
        `no workspace root is configured for owner '${owner}'; remote callers work in a fresh scratch directory (leave ${what} out)`,
      );
    }
    const named = roots.join("', '");
    if (!asked.startsWith("/") || asked.includes("\0")) {
      throw refuse(
        `a remote caller names an absolute directory inside a workspace root ('${named}')`,
      );
    }
    const p = platform();
    const real = await p.realPath(asked).catch(() => undefined);
    if (real === undefined) throw refuse("no such directory");
    const realRoots = await Promise.all(roots.map((root) => p.realPath(root).catch(() => root)));
    if (!realRoots.some((root) => within(real, root))) {
      throw refuse(`it is outside the workspace roots of owner '${owner}' ('${named}')`);
    }
    const forbidden = await Promise.all(
      this.#forbidden.map((dir) => p.realPath(dir).catch(() => dir)),
    );
    if (forbidden.some((dir) => within(real, dir) || within(dir, real))) {
      throw refuse(
        "it holds, or lies inside, the service's own data or source, which no remote caller may reach",
      );
    }
    const info = await p.stat(real).catch(() => undefined);
    if (!info?.isDirectory) throw refuse("it is not a directory");
    return real;
  }

  /**
   * Where a request's workdir is on this host: a scratch workdir's role-named reference
   * (`$SVC_HOME/tmp/work-…`) expanded to its path, any other workdir as it is.
   */
  placeOf(workdir: string): string;
  /** As {@linkcode WorkspacePolicy.placeOf} for a request that may have no workdir. */
  placeOf(workdir: string | undefined): string | undefined;
  placeOf(workdir: string | undefined): string | undefined {
    const name = workdir === undefined ? undefined : SCRATCH_REF.exec(workdir)?.[1];
    return name === undefined ? workdir : joinPath(this.#scratchRoot, name);
  }

  /**
   * The directory the calls of a run or task whose recorded workdir is `workdir` must stay
   * inside, checked again right before each process starts: the recorded workdir itself (the
   * real path {@linkcode WorkspacePolicy.workdirFor} gave), a scratch workdir at its place with
   * the scratch root's real path. Undefined without a workdir.
   */
  async rootOf(workdir: string | undefined): Promise<string | undefined> {
    if (workdir === undefined) return undefined;
    const name = SCRATCH_REF.exec(workdir)?.[1];
    if (name === undefined) return workdir;
    const root = await platform().realPath(this.#scratchRoot).catch(() => this.#scratchRoot);
    return joinPath(root, name);
  }

  /** A scratch workdir's reference when it still exists, or undefined for any other path. */
  async #ownScratch(ref: string): Promise<string | undefined> {
    if (!SCRATCH_REF.test(ref)) return undefined;
    const info = await platform().stat(this.placeOf(ref)).catch(() => undefined);
    return info?.isDirectory ? ref : undefined;
  }

  /**
   * A fresh private directory under the scratch root, as its reference. Its name carries no
   * process, so the sweep of a later host leaves it for 8 days: a run queued for a daemon
   * still finds it.
   */
  async #makeScratch(): Promise<string> {
    const p = platform();
    await p.mkdir(this.#scratchRoot);
    const path = await p.makeTempDir({ dir: this.#scratchRoot, prefix: SCRATCH_PREFIX });
    return `$SVC_HOME/tmp/${path.slice(path.lastIndexOf("/") + 1)}`;
  }
}
