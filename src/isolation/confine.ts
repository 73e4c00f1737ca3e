/**
 * How a local guest's `deno run` is confined, decided per guest from `SVC_WORKFLOW_SANDBOX`
 * and what this host has: inside bubblewrap on Linux, under a sandbox-exec deny-list profile on
 * macOS, or as a plain permissionless subprocess. `on` fails closed where no sandbox is
 * available; `auto` falls back to the plain subprocess and the run's status says so.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";
import { bubblewrapArgv, findBubblewrap } from "./bubblewrap.ts";
import { macosDenyProfile } from "./macos_profile.ts";
import type { GuestSandbox, SandboxMode } from "./sandbox_mode.ts";

/** The plain guest command to confine. */
export interface GuestCommand {
  /** The Deno binary. */
  deno: string;
  /** `run ...` and the rest of Deno's arguments. */
  args: readonly string[];
  /** The guest's whole environment. */
  env: Readonly<Record<string, string>>;
  /** Host paths the guest must read: its scratch directory, the bootstrap's folder. */
  readable: readonly string[];
  /** svc's data directory, which holds tokens and every run: denied on macOS. */
  dataDir: string;
}

/** The command that runs the guest, and what confines it. */
export interface ConfinedCommand {
  /** The executable to spawn. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** What the run's status reports. */
  sandbox: GuestSandbox;
}

function plain(guest: GuestCommand, note: string): ConfinedCommand {
  return {
    command: guest.deno,
    args: [...guest.args],
    sandbox: { kind: "none", hardened: false, note },
  };
}

function unavailable(reason: string, fix: string): SvcError {
  return new SvcError(
    "isolation_unavailable",
    `Cannot start the guest: SVC_WORKFLOW_SANDBOX=on, but ${reason}; ${fix}, or set ` +
      "SVC_WORKFLOW_SANDBOX=auto to run it unconfined (the script was not run)",
  );
}

/**
 * The real paths of the directories a guest may read, as bubblewrap mounts them: each is
 * resolved once, here, and only the real path is bound, so that a link on the way (made since
 * the directory was chosen) cannot widen what the guest sees. One that no longer resolves is a
 * refusal: the guest would not find its files.
 */
async function realReadable(paths: readonly string[]): Promise<string[]> {
  const p = platform();
  const real: string[] = [];
  for (const path of paths) {
    const resolved = await p.realPath(path).catch(() => undefined);
    if (resolved === undefined) {
      throw new SvcError(
        "guest_failed",
        "Cannot start the guest: a directory it must read no longer exists",
      );
    }
    if (!real.includes(resolved)) real.push(resolved);
  }
  return real;
}

/** Wraps the guest's command in this host's OS sandbox, as `mode` asks. */
export async function confine(guest: GuestCommand, mode: SandboxMode): Promise<ConfinedCommand> {
  if (mode === "off") return plain(guest, "SVC_WORKFLOW_SANDBOX=off");
  const p = platform();
  if (p.os === "linux") {
    const probe = await findBubblewrap(guest.deno, { dataDir: guest.dataDir });
    if (!probe.ok) {
      if (mode === "on") {
        throw unavailable(probe.reason, "install bubblewrap (apt-get install bubblewrap)");
      }
      return plain(guest, probe.reason);
    }
    return {
      command: probe.sandbox.bwrap,
      args: bubblewrapArgv(probe.sandbox, {
        readOnly: await realReadable(guest.readable),
        env: guest.env,
        denoArgs: guest.args,
      }),
      sandbox: { kind: "bubblewrap", hardened: true, note: null },
    };
  }
  if (p.os === "darwin") {
    const sandboxExec = p.which("sandbox-exec");
    const home = p.homeDir();
    if (!sandboxExec || !home) {
      const reason = sandboxExec ? "the home directory is unknown" : "sandbox-exec is missing";
      if (mode === "on") throw unavailable(reason, "run on a macOS with sandbox-exec");
      return plain(guest, reason);
    }
    const profile = macosDenyProfile({ home, svcHome: guest.dataDir, readable: guest.readable });
    return {
      command: sandboxExec,
      args: ["-p", profile, guest.deno, ...guest.args],
      sandbox: { kind: "sandbox-exec", hardened: true, note: null },
    };
  }
  const reason = `no OS sandbox for local guests on ${p.os}`;
  if (mode === "on") throw unavailable(reason, "use isolation microvm");
  return plain(guest, reason);
}
