import type {
  ChildProcess,
  ExitStatus,
  FileInfo,
  KvAtomic,
  KvEntry,
  KvKey,
  KvStore,
  Platform,
  SpawnOptions,
} from "./types.ts";

const encoder = new TextEncoder();

function spawnDeno(command: string, options: SpawnOptions): ChildProcess {
  const child = new Deno.Command(command, {
    args: [...options.args],
    env: options.env,
    clearEnv: options.clearEnv ?? false,
    cwd: options.cwd,
    detached: options.newProcessGroup ?? false,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const group = options.newProcessGroup ?? false;
  let exited = false;
  const status: Promise<ExitStatus> = child.status.then((s) => {
    exited = true;
    return { code: s.code, signal: s.signal ?? null };
  });
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    status,
    kill(signal = "SIGKILL") {
      try {
        // A negative pid addresses the whole group; grandchildren die with the guest.
        if (group) Deno.kill(-child.pid, signal);
        else if (!exited) child.kill(signal);
      } catch {
        // Already gone: killing is best effort by contract.
      }
    },
  };
}

function which(command: string): string | undefined {
  const path = Deno.env.get("PATH") ?? "";
  for (const dir of path.split(":")) {
    if (!dir) continue;
    const candidate = `${dir}/${command}`;
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0) & 0o111) !== 0) return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

function entry(raw: Deno.KvEntryMaybe<unknown>): KvEntry {
  const value = raw.value instanceof Uint8Array ? raw.value : null;
  return { key: raw.key as unknown as KvKey, value, versionstamp: raw.versionstamp };
}

function wrapAtomic(atomic: Deno.AtomicOperation): KvAtomic {
  const wrapped: KvAtomic = {
    check(key, versionstamp) {
      atomic.check({ key: key as Deno.KvKey, versionstamp });
      return wrapped;
    },
    set(key, value) {
      atomic.set(key as Deno.KvKey, value);
      return wrapped;
    },
    delete(key) {
      atomic.delete(key as Deno.KvKey);
      return wrapped;
    },
    async commit() {
      const result = await atomic.commit();
      return { ok: result.ok };
    },
  };
  return wrapped;
}

async function openKv(path: string): Promise<KvStore> {
  const kv = await Deno.openKv(path);
  return {
    get: async (key) => entry(await kv.get(key as Deno.KvKey)),
    async *list(prefix, options = {}) {
      for await (const raw of kv.list({ prefix: prefix as Deno.KvKey }, options)) yield entry(raw);
    },
    atomic: () => wrapAtomic(kv.atomic()),
    close: () => kv.close(),
  };
}

function processAlive(pid: number): boolean {
  try {
    // SIGCONT does nothing to a running process; only its delivery is of interest.
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

/** The platform implementation for the Deno runtime. */
export const denoPlatform: Platform = {
  runtime: `deno ${Deno.version.deno}`,
  denoExecutable: () => Deno.execPath(),
  which,
  spawn: spawnDeno,
  env: (name) => Deno.env.get(name),
  homeDir: () => Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE"),
  cwd: () => Deno.cwd(),
  readTextFile: (path) => Deno.readTextFile(path),
  writeTextFile: (path, text) => Deno.writeTextFile(path, text),
  async stat(path): Promise<FileInfo> {
    const info = await Deno.stat(path);
    return { isFile: info.isFile, isDirectory: info.isDirectory, size: info.size };
  },
  mkdir: (path) => Deno.mkdir(path, { recursive: true }),
  makeTempDir: ({ dir, prefix }) => Deno.makeTempDir({ dir, prefix }),
  rename: (from, to) => Deno.rename(from, to),
  openKv,
  processAlive,
  pid: () => Deno.pid,
  remove: (path) => Deno.remove(path, { recursive: true }),
  writeStderr(text) {
    const bytes = encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
  },
  async writeStdout(text) {
    const bytes = encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written));
  },
  onInterrupt(handler) {
    Deno.addSignalListener("SIGINT", handler);
    return () => Deno.removeSignalListener("SIGINT", handler);
  },
  args: () => [...Deno.args],
  exit: (code) => Deno.exit(code),
};
