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
import { type ExitStatus, platform } from "../platform/mod.ts";

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

/**
 * Looks for bubblewrap and checks once per process (per Deno binary) that it can confine a
 * guest here: `bwrap` on PATH, the libraries of `deno` (from `ldd`), and a confined
 * `deno --version` that succeeds (a container may forbid the namespaces bwrap needs).
 */
export function findBubblewrap(deno: string): Promise<BubblewrapProbe> {
  const bwrap = platform().which("bwrap");
  if (!bwrap) {
    return Promise.resolve({ ok: false, reason: "bubblewrap (bwrap) is not installed" });
  }
  const key = `${bwrap}\0${deno}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = probeBubblewrap(bwrap, deno);
    probes.set(key, probe);
  }
  return probe;
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
