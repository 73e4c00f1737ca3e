/**
 * A real Postgres server for the tests: Debian's `postgresql` package, a cluster made by
 * `initdb` in a temporary directory and run by `pg_ctl`, listening on 127.0.0.1 at a free port
 * (and on a Unix socket in the same directory). Stopped and removed when disposed. Postgres
 * refuses to run as root, so under root the cluster belongs to the package's `postgres` user.
 */

/** The package's programs: `SVC_TEST_PG_BIN`, else the newest `/usr/lib/postgresql/N/bin`. */
export function postgresBin(): string | undefined {
  const named = Deno.env.get("SVC_TEST_PG_BIN");
  if (named) return named;
  let best: { version: number; dir: string } | undefined;
  try {
    for (const entry of Deno.readDirSync("/usr/lib/postgresql")) {
      const version = Number(entry.name);
      const dir = `/usr/lib/postgresql/${entry.name}/bin`;
      try {
        Deno.statSync(`${dir}/initdb`);
      } catch {
        continue;
      }
      if (Number.isFinite(version) && (!best || version > best.version)) best = { version, dir };
    }
  } catch {
    return undefined;
  }
  return best?.dir;
}

/** A running test server. */
export interface PgServer extends AsyncDisposable {
  /** The cluster's directory. */
  readonly dir: string;
  /** Its TCP port on 127.0.0.1. */
  readonly port: number;
  /** A `postgres://` URL of a database of the cluster (made by {@linkcode PgServer.database}). */
  url(database?: string): string;
  /** Makes a new empty database and returns its URL. */
  database(name?: string): Promise<string>;
  /** Stops the server (fast shutdown: connections are cut). */
  stop(): Promise<void>;
  /** Starts it again after {@linkcode PgServer.stop}, on the same port. */
  start(): Promise<void>;
  /** Runs one SQL statement through psql as the superuser, and returns its output. */
  psql(sql: string, database?: string): Promise<string>;
}

/** Options of {@linkcode startPostgres}. */
export interface StartPostgresOptions {
  /** Keep fsync on (a benchmark's honest commit cost). Default false: tests need no durability. */
  durable?: boolean;
}

const USER = "svc";
let databases = 0;

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function run(
  command: string,
  args: string[],
  options: { asPostgres: boolean; quiet?: boolean },
): Promise<string> {
  const [program, argv] = options.asPostgres
    ? ["setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", command, ...args]]
    : [command, args];
  const output = await new Deno.Command(program, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    env: { LC_ALL: "C" },
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    throw new Error(
      `${command} ${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr)}${text}`,
    );
  }
  return text;
}

/** Makes, starts and returns a Postgres cluster in a temporary directory. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PgServer> {
  const bin = postgresBin();
  if (!bin) {
    throw new Error(
      "Cannot start Postgres for the tests: no /usr/lib/postgresql/N/bin/initdb (apt-get install postgresql)",
    );
  }
  const asPostgres = Deno.uid() === 0;
  const dir = await Deno.makeTempDir({ prefix: "svc-pg-" });
  const data = `${dir}/data`;
  const port = freePort();
  if (asPostgres) await run("chown", ["postgres:postgres", dir], { asPostgres: false });
  await run(`${bin}/initdb`, [
    "-D",
    data,
    "-U",
    USER,
    "--auth=trust",
    "-E",
    "UTF8",
    "--no-sync",
    "--no-instructions",
  ], { asPostgres });
  const settings = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c max_connections=200",
    ...(options.durable ? [] : ["-c fsync=off", "-c synchronous_commit=off"]),
  ].join(" ");
  const pgCtl = (action: string[]) => run(`${bin}/pg_ctl`, ["-D", data, ...action], { asPostgres });
  const start = () => pgCtl(["-o", settings, "-l", `${dir}/server.log`, "-w", "-t", "30", "start"]);
  const stop = () => pgCtl(["-m", "fast", "-w", "-t", "30", "stop"]);
  try {
    await start();
  } catch (error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
  let running = true;
  // A test run cut short (a filter, a failure before the dispose) still stops the server.
  const onUnload = () => {
    if (!running) return;
    const [program, args] = asPostgres
      ? ["setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", `${bin}/pg_ctl`]]
      : [`${bin}/pg_ctl`, []];
    new Deno.Command(program, {
      args: [...args, "-D", data, "-m", "immediate", "stop"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // Removed already.
    }
  };
  globalThis.addEventListener("unload", onUnload);
  const url = (database = "postgres") => `postgres://${USER}@127.0.0.1:${port}/${database}`;
  const psql = (sql: string, database = "postgres") =>
    run(`${bin}/psql`, [
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
      "-U",
      USER,
      "-d",
      database,
      "-v",
      "ON_ERROR_STOP=1",
      "-tAc",
      sql,
    ], { asPostgres: false });
  return {
    dir,
    port,
    url,
    psql,
    async database(name?: string) {
      const db = name ?? `svc_test_${Deno.pid}_${++databases}`;
      await psql(`CREATE DATABASE ${db}`);
      return url(db);
    },
    async stop() {
      if (!running) return;
      await stop();
      running = false;
    },
    async start() {
      if (running) return;
      await start();
      running = true;
    },
    async [Symbol.asyncDispose]() {
      globalThis.removeEventListener("unload", onUnload);
      if (running) await stop().catch(() => {});
      running = false;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
