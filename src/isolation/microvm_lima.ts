import { platform } from "../platform/mod.ts";
import type { GuestBundle } from "./guest_bundle.ts";
import { type MicrovmSettings, microvmUnavailable } from "./microvm_config.ts";
import { guestCommand, guestName, sendBundle, settled } from "./microvm_guest.ts";
import { runTool, spawnTool } from "./tool_command.ts";
import type { MicrovmSlots } from "./microvm_slots.ts";
import type { GuestHandle, GuestSpawnRequest } from "./types.ts";

/** Bound of `limactl list` and of the teardown's `limactl shell … pkill`. */
const TOOL_TIMEOUT_MS = 30_000;
/** How long a killed `limactl shell` may take to end before the teardown goes on. */
const KILL_WAIT_MS = 5_000;
/**
 * How long a guest that is being torn down may take to end by itself: one that sent its done
 * frame exits at once, and then nothing inside the instance needs killing.
 */
const EXIT_GRACE_MS = 500;

const PROVISION =
  'create it with no host mounts and Deno installed (docs/ISOLATION.md, "microvm": ' +
  "limactl create --name=<instance> --mount-none template:default, then install Deno at " +
  "SVC_WORKFLOW_MICROVM_GUEST_DENO inside it)";

/** The part of one line of `limactl list --json` that the check reads. */
interface LimaInstance {
  name?: unknown;
  status?: unknown;
  config?: { mounts?: unknown } | null;
}

/**
 * Checks that the instance exists, is running and mounts no host directory, with
 * `limactl list --json <instance>` (one JSON object a line, `config` holding its lima.yaml).
 * Anything else, and an answer it cannot read, fails closed.
 */
async function checkInstance(
  limactl: string,
  instance: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const result = await runTool(limactl, ["list", "--json", instance], {
    timeoutMs: TOOL_TIMEOUT_MS,
    signal,
  });
  if (signal?.aborted) throw signal.reason;
  let found: LimaInstance | undefined;
  for (const line of result.stdout.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const value = JSON.parse(line) as LimaInstance;
      if (value !== null && typeof value === "object" && value.name === instance) found = value;
    } catch {
      // Not JSON: not the instance.
    }
  }
  if (result.code !== 0 || found === undefined) {
    throw microvmUnavailable(
      `the Lima instance '${instance}' (SVC_WORKFLOW_MICROVM_LIMA_INSTANCE) does not exist ` +
        `(limactl list: ${toolLine(result.stderr, result.code)}); ${PROVISION}`,
    );
  }
  if (found.status !== "Running") {
    const status = typeof found.status === "string" ? found.status.slice(0, 40) : "unknown";
    throw microvmUnavailable(
      `the Lima instance '${instance}' is ${
        printable(status)
      }, not Running; start it with: limactl start ${instance}`,
    );
  }
  if (found.config === undefined || found.config === null || typeof found.config !== "object") {
    throw microvmUnavailable(
      `limactl list does not report the configuration of the Lima instance '${instance}', so ` +
        "its mounts cannot be checked; use Lima 1.0 or later",
    );
  }
  const mounts = found.config.mounts;
  if (mounts !== undefined && mounts !== null && (!Array.isArray(mounts) || mounts.length > 0)) {
    const where = Array.isArray(mounts)
      ? mounts.slice(0, 4).map((m) =>
        typeof m === "object" && m !== null && typeof (m as { location?: unknown }).location ===
            "string"
          ? printable((m as { location: string }).location.slice(0, 80))
          : "?"
      ).join(", ")
      : "?";
    throw microvmUnavailable(
      `the Lima instance '${instance}' mounts host directories (${where}): a guest there could ` +
        `read them; remove them (limactl edit ${instance} --mount-none, or recreate the ` +
        "instance with --mount-none)",
    );
  }
}

function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?");
}

function toolLine(stderr: string, code: number): string {
  const last = stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "").at(-1);
  return last ? printable(last.slice(0, 240)) : `exit code ${code}`;
}

/**
 * `backend_a`: the guest runs in the resident Lima instance through `limactl shell`, whose
 * stdin/stdout carry first the guest bundle, then the bridge. Checked before each run.
 */
export async function spawnLimaGuest(
  request: GuestSpawnRequest,
  options: { settings: MicrovmSettings; slots: MicrovmSlots; bundle: () => Promise<GuestBundle> },
): Promise<GuestHandle> {
  const { settings, slots } = options;
  const limactl = platform().which("limactl");
  if (limactl === undefined) {
    throw microvmUnavailable(
      "limactl (Lima, SVC_WORKFLOW_MICROVM_BACKEND=backend_a) was not found on PATH; install " +
        `Lima (https://lima-vm.io) and provision the instance '${settings.limaInstance}': ` +
        PROVISION,
    );
  }
  await checkInstance(limactl, settings.limaInstance, request.signal);
  const bundle = await options.bundle();
  const release = await slots.acquire({ signal: request.signal, onQueued: request.onQueued });
  const marker = guestName();
  let child;
  try {
    child = spawnTool(limactl, [
      "shell",
      "--workdir",
      "/",
      settings.limaInstance,
      ...guestCommand(settings, request, { bundle, marker }),
    ]);
  } catch (error) {
    release();
    throw error;
  }
  // A guest that ended by itself with code 0 sent its done frame and left nothing behind.
  let finishedCleanly = false;
  const ended = child.status.then((status) => {
    finishedCleanly = status.code === 0 && status.signal === null;
  }).catch(() => {});
  sendBundle(child, bundle);
  let disposed: Promise<void> | undefined;
  const process = child;
  return {
    process,
    sandbox: {
      kind: "microvm",
      hardened: true,
      note: "Lima: one resident instance for every microvm run",
    },
    dispose() {
      disposed ??= (async () => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([ended, new Promise((r) => (timer = setTimeout(r, EXIT_GRACE_MS)))]);
        clearTimeout(timer);
        const reap = !finishedCleanly;
        process.kill("SIGKILL");
        await settled(process, KILL_WAIT_MS);
        // Killing the local shell does not stop a guest busy inside the VM: find it by the
        // marker of its command line and kill it there. "[s]" keeps pkill off its own shell.
        if (reap) {
          await runTool(limactl, [
            "shell",
            "--workdir",
            "/",
            settings.limaInstance,
            "pkill",
            "-KILL",
            "-f",
            `[s]${marker.slice(1)}`,
          ], { timeoutMs: TOOL_TIMEOUT_MS }).catch(() => {});
        }
        release();
      })();
      return disposed;
    },
  };
}
