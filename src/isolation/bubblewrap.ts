/**
 * The hardened Linux sandbox of local guests: bubblewrap (`bwrap`). The guest gets new user,
 * mount, PID, network, IPC, UTS and cgroup namespaces (no network at all, not even loopback),
 * dies with its parent, has a PID namespace and a `/proc` of its own (it sees bwrap's init and
 * itself, no other process), a cleared environment, and no host directory but the Deno binary,
 * the shared libraries it links, and the guest's own read-only files.
 *
 * Not `--new-session`: the host already starts bwrap in a session of its own (no controlling
 * terminal; the guest's standard streams are pipes), and a second session would also be a new
 * process group, out of reach of the host's kill of the guest's group: the guest would live on
 * (and send frames) until bwrap's death reached it.
 *
 * Not `--as-pid-1`: the kernel never delivers a signal without a handler to the first process
 * of a PID namespace, so a guest that is PID 1 would ignore the SIGXCPU of its CPU-time limit
 * and die only at the hard limit, by a SIGKILL nobody could tell from any other. bwrap's own
 * init stays PID 1 and passes the guest's death on: exit status 128 + the signal.
 * @module
 */
import { type ExitStatus, joinPath, platform } from "../platform/mod.ts";

/** Where the Deno binary appears inside the sandbox. */
const SANDBOX_DENO = "/usr/bin/deno";

/** What the sandbox is built from: found once per process. */
export interface Bubblewrap {
  /** The `bwrap` executable. */
  bwrap: string;
  /** The guest's Deno binary on the host. */
  deno: string;
  /** Host paths of the shared libraries Deno links (bound read-only at the same paths). */
  libraries: readonly string[];
}

/** Options of {@linkcode bubblewrapArgv}. */
export interface BubblewrapCommand {
  /** Host paths the guest may read, bound read-only at the same path. */
  readOnly: readonly string[];
  /** The guest's environment (the only variables it sees). */
  env: Readonly<Record<string, string>>;
  /** The arguments of `deno` (after the binary). */
  denoArgs: readonly string[];
}

/** The argv of `bwrap` that runs `deno denoArgs...` confined (without the `bwrap` itself). */
export function bubblewrapArgv(sandbox: Bubblewrap, command: BubblewrapCommand): string[] {
  const argv = [
    "--unshare-all",
    "--die-with-parent",
    "--clearenv",
    // The mounts come first, so that a bind below /tmp (the guest's scratch directory may lie
    // there) is made on top of the empty /tmp, not hidden under it.
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--ro-bind",
    sandbox.deno,
    SANDBOX_DENO,
  ];
  for (const library of sandbox.libraries) argv.push("--ro-bind", library, library);
  for (const path of command.readOnly) argv.push("--ro-bind", path, path);
  for (const [name, value] of Object.entries(command.env)) argv.push("--setenv", name, value);
  argv.push("--chdir", "/", "--", SANDBOX_DENO, ...command.denoArgs);
  return argv;
}

/** Signal names by number (Linux), for the exit status bwrap gives a guest a signal killed. */
const SIGNALS: Readonly<Record<number, string>> = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  4: "SIGILL",
  6: "SIGABRT",
  7: "SIGBUS",
  8: "SIGFPE",
  9: "SIGKILL",
  11: "SIGSEGV",
  13: "SIGPIPE",
  14: "SIGALRM",
  15: "SIGTERM",
  24: "SIGXCPU",
  25: "SIGXFSZ",
};

/**
 * The guest's own end from bwrap's exit status: bwrap exits with 128 + n when the guest died of
 * signal n, which is what the host must see (a CPU-time limit is SIGXCPU, not "exit 152").
 */
export function guestExit(status: ExitStatus): ExitStatus {
  if (status.signal !== null || status.code <= 128) return status;
  const signal = SIGNALS[status.code - 128];
  return signal ? { code: status.code, signal } : status;
}

/** The absolute paths in `ldd` output: the libraries a dynamically linked binary loads. */
export function lddPaths(output: string): string[] {
  const paths = new Set<string>();
  for (const line of output.split("\n")) {
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
    const match = /(?:=>\s*)?(\/[^\s()]+)\s+\(0x[0-9a-f]+\)\s*$/.exec(line.trim());
    if (match) paths.add(match[1]!);
  }
  return [...paths];
}

async function outputOf(command: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  const child = platform().spawn(command, { args, clearEnv: true, env: {}, cwd: "/" });
  await child.stdin.close().catch(() => {});
  const [out, , status] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.status,
  ]);
  return { ok: status.code === 0, out };
}

/** What {@linkcode findBubblewrap} found: the sandbox, or why there is none. */
export type BubblewrapProbe = { ok: true; sandbox: Bubblewrap } | { ok: false; reason: string };

const probes = new Map<string, Promise<BubblewrapProbe>>();
/** Cache files this process has written or read a verdict in. */
const cacheFiles = new Set<string>();

/** Options of {@linkcode findBubblewrap}. */
export interface FindBubblewrapOptions {
  /**
   * svc's data directory: a verdict that bubblewrap works is kept in `cache/bubblewrap.json`
   * under it, so that the next process skips the probe (`ldd` and a confined `deno --version`).
   */
  dataDir?: string;
}

/** Where the verdict is kept under the data directory. */
const CACHE_FILE = ["cache", "bubblewrap.json"];
/** Most libraries a cached verdict may name (Deno links about ten). */
const MAX_CACHED_LIBRARIES = 64;
const BOOT_ID = "/proc/sys/kernel/random/boot_id";
/**
 * Age past which a verdict is probed again when the boot id cannot be read (Deno grants /proc
 * only to --allow-all, which the launched host never has): a reboot that changed the kernel is
 * then noticed within this time, in ms.
 */
const UNBOOTED_MAX_AGE_MS = 60 * 60 * 1000;

/**
 * What a verdict holds for: the bwrap and deno binaries as they are now (path, size, mtime) and
 * this boot of the kernel (empty when unreadable); null when a binary cannot be examined (then
 * nothing is cached).
 */
async function identify(bwrap: string, deno: string): Promise<string | null> {
  const p = platform();
  try {
    const real = await p.realPath(deno);
    const [bwrapInfo, denoInfo, bootId] = await Promise.all([
      p.stat(bwrap),
      p.stat(real),
      p.readTextFile(BOOT_ID).catch(() => ""),
    ]);
    return JSON.stringify([
      bwrap,
      bwrapInfo.size,
      bwrapInfo.mtimeMs,
      real,
      denoInfo.size,
      denoInfo.mtimeMs,
      bootId.trim(),
    ]);
  } catch {
    return null;
  }
}

/** Size and mtime of each library, as a cached verdict records them. */
async function stampsOf(libraries: readonly string[]): Promise<string> {
  const p = platform();
  const infos = await Promise.all(libraries.map((path) => p.stat(path)));
  return JSON.stringify(infos.map((info) => [info.size, info.mtimeMs]));
}

/**
 * A verdict cached for exactly `identity`, whose libraries are all still as they were; else
 * undefined. The file is svc's own (the host alone writes the data directory), but it is
 * checked as if it were not: absolute, plain paths only, a bounded number of them.
 */
async function cachedVerdict(
  file: string,
  identity: string,
  bwrap: string,
): Promise<BubblewrapProbe | undefined> {
  try {
    const raw: unknown = JSON.parse(await platform().readTextFile(file));
    if (typeof raw !== "object" || raw === null) return undefined;
    const { key, deno, libraries, stamps, at } = raw as Record<string, unknown>;
    if (key !== identity || typeof deno !== "string" || !deno.startsWith("/")) return undefined;
    const bootless = (JSON.parse(identity) as unknown[]).at(-1) === "";
    if (bootless && !(typeof at === "number" && Math.abs(Date.now() - at) < UNBOOTED_MAX_AGE_MS)) {
      return undefined;
    }
    if (!Array.isArray(libraries) || libraries.length > MAX_CACHED_LIBRARIES) return undefined;
    const paths = libraries.filter((path): path is string =>
      typeof path === "string" && /^\/[^\0]{1,4095}$/.test(path) && !path.split("/").includes("..")
    );
    if (paths.length !== libraries.length) return undefined;
    if (stamps !== await stampsOf(paths)) return undefined;
    return { ok: true, sandbox: { bwrap, deno, libraries: paths } };
  } catch {
    return undefined;
  }
}

/** Keeps a working verdict for the next process; best effort (a failed write only costs a probe). */
async function cacheVerdict(file: string, identity: string, sandbox: Bubblewrap): Promise<void> {
  const p = platform();
  try {
    await p.mkdir(file.slice(0, file.lastIndexOf("/")));
    const text = JSON.stringify({
      key: identity,
      at: Date.now(),
      deno: sandbox.deno,
      libraries: sandbox.libraries,
      stamps: await stampsOf(sandbox.libraries),
    });
    // Written whole, then renamed: a concurrent reader sees the old verdict or the new one.
    const temp = `${file}.${crypto.randomUUID()}.tmp`;
    await p.writeTextFile(temp, text);
    await p.rename(temp, file);
  } catch {
    // The next process probes again.
  }
}

/**
 * Looks for bubblewrap and checks once per process (per Deno binary, and per state of the two
 * binaries) that it can confine a guest here: `bwrap` on PATH, the libraries of `deno` (from
 * `ldd`), and a confined `deno --version` that succeeds (a container may forbid the namespaces
 * bwrap needs). With `dataDir`, a working verdict is kept on disk for later processes, keyed by
 * the paths, sizes and mtimes of bwrap and deno and by the kernel's boot id (where it cannot be
 * read, as in the launched host, a verdict lasts an hour), and dropped when a library it binds
 * changed. Only a working verdict is kept: a failed probe (perhaps a passing
 * failure) never makes later processes run unconfined; a stale working one can only make a guest
 * fail to start.
 */
export async function findBubblewrap(
  deno: string,
  options: FindBubblewrapOptions = {},
): Promise<BubblewrapProbe> {
  const bwrap = platform().which("bwrap");
  if (!bwrap) {
    return {
      ok: false,
      reason:
        "bubblewrap (bwrap) is not installed (install it with: apt-get install -y bubblewrap)",
    };
  }
  const identity = await identify(bwrap, deno);
  const file = options.dataDir && identity ? joinPath(options.dataDir, ...CACHE_FILE) : undefined;
  // One verdict per process for these binaries, whichever data directory asks.
  const key = JSON.stringify([bwrap, deno, identity]);
  let probe = probes.get(key);
  if (!probe) {
    probe = (async () => {
      const cached = file && identity ? await cachedVerdict(file, identity, bwrap) : undefined;
      // The file holds this verdict already: nothing to write for it.
      if (cached && file) cacheFiles.add(file);
      if (cached) return cached;
      const found = await probeBubblewrap(bwrap, deno);
      if (found.ok && file && identity) await cacheVerdict(file, identity, found.sandbox);
      if (file) cacheFiles.add(file);
      return found;
    })();
    probes.set(key, probe);
  }
  const found = await probe;
  // Another data directory of this process: later processes using it find the verdict too.
  if (found.ok && file && identity && !cacheFiles.has(file)) {
    cacheFiles.add(file);
    await cacheVerdict(file, identity, found.sandbox);
  }
  return found;
}

async function probeBubblewrap(bwrap: string, deno: string): Promise<BubblewrapProbe> {
  const p = platform();
  const real = await p.realPath(deno).catch(() => deno);
  let libraries: string[] = [];
  const ldd = p.which("ldd");
  if (ldd) {
    const listed = await outputOf(ldd, [real]).catch(() => ({ ok: false, out: "" }));
    // A static binary makes ldd fail: it needs no library.
    if (listed.ok) libraries = lddPaths(listed.out);
  }
  const sandbox: Bubblewrap = { bwrap, deno: real, libraries };
  const check = await outputOf(
    bwrap,
    bubblewrapArgv(sandbox, { readOnly: [], env: {}, denoArgs: ["--version"] }),
  ).catch(() => ({ ok: false, out: "" }));
  if (!check.ok || !check.out.startsWith("deno ")) {
    return {
      ok: false,
      reason: "bubblewrap cannot create its namespaces here (a container without user " +
        "namespaces?)",
    };
  }
  return { ok: true, sandbox };
}
