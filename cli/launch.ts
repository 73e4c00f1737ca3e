/**
 * `deno task svc`: starts the host (`cli/main.ts`) in a `deno run` of its own with the
 * narrowest grants its configuration allows ({@linkcode hostPermissionFlags}), and passes its
 * exit status on. The launcher runs no user input; it only computes the flags.
 * @module
 */
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { printLine } from "./terminal.ts";
import { configuredGrants, hostPermissionFlags, listenGrant } from "./permissions.ts";
import { hostModuleArgs } from "./host_entry.ts";

const SIGNAL_NUMBERS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGTERM: 15,
};

/** The directory `deno task` was started in (`INIT_CWD`), when it is one. */
async function userDir(): Promise<{ cwd: string } | undefined> {
  const p = platform();
  const dir = p.env("INIT_CWD");
  if (!dir) return undefined;
  const info = await p.stat(dir).catch(() => undefined);
  return info?.isDirectory ? { cwd: dir } : undefined;
}

/** Runs the host with `argv`; resolves to its exit status (128 + n when signal n ended it). */
export async function launch(argv: readonly string[]): Promise<number> {
  const p = platform();
  const deno = p.denoExecutable();
  let flags: string[];
  try {
    if (!deno) throw new SvcError("internal", "Cannot launch svc: no Deno binary runs it");
    const grants = await configuredGrants();
    const listen = listenGrant(argv);
    if (listen !== undefined) grants.net = [...(grants.net ?? []), listen];
    // `svc doctor` asks the harnesses' endpoints whether their credentials answer.
    if (argv[0] === "doctor") grants.net = [...(grants.net ?? []), ...(grants.probeNet ?? [])];
    flags = hostPermissionFlags(grants);
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    printLine(`svc: ${error.message}`);
    return 2;
  }
  const status = await p.run(deno, {
    args: [
      "run",
      // Deno's npm install progress (over a hundred lines on a fresh clone) is kept out of the
      // terminal; its errors still print.
      "--quiet",
      ...flags,
      ...(await hostModuleArgs(argv)),
      ...argv,
    ],
    // `deno task` runs in the checkout; the user's paths are relative to where they typed.
    ...(await userDir() ?? {}),
  });
  if (status.signal !== null) return 128 + (SIGNAL_NUMBERS[status.signal] ?? 0);
  return status.code;
}

if (import.meta.main) {
  platform().exit(await launch(platform().args()));
}
