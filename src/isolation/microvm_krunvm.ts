import { platform } from "../platform/mod.ts";
import type { GuestBundle } from "./guest_bundle.ts";
import { type MicrovmSettings, microvmUnavailable } from "./microvm_config.ts";
import { guestCommand, guestName, sendBundle, settled } from "./microvm_guest.ts";
import type { MicrovmSlots } from "./microvm_slots.ts";
import { runTool, spawnTool, toolMessage } from "./tool_command.ts";
import type { GuestHandle, GuestSpawnRequest } from "./types.ts";

/** Bound of `krunvm create`: it may have to unpack the image first. */
const CREATE_TIMEOUT_MS = 10 * 60_000;
/** Bound of `krunvm delete`. */
const DELETE_TIMEOUT_MS = 60_000;
/** How long a killed `krunvm start` may take to end before the VM is deleted anyway. */
const KILL_WAIT_MS = 5_000;

/** Deletes a VM, bounded; a VM that is already gone is no error. */
async function deleteVm(krunvm: string, vm: string): Promise<void> {
  await runTool(krunvm, ["delete", vm], { timeoutMs: DELETE_TIMEOUT_MS }).catch(() => {});
}

/**
 * `backend_b`: one krunvm micro-VM per run, created from the image, started with the guest's
 * command on its console (whose stdin/stdout carry first the guest bundle, then the bridge),
 * and deleted when the run ends however it ends.
 */
export async function spawnKrunvmGuest(
  request: GuestSpawnRequest,
  options: { settings: MicrovmSettings; slots: MicrovmSlots; bundle: () => Promise<GuestBundle> },
): Promise<GuestHandle> {
  const { settings, slots } = options;
  const krunvm = platform().which("krunvm");
  if (krunvm === undefined) {
    throw microvmUnavailable(
      "krunvm (SVC_WORKFLOW_MICROVM_BACKEND=backend_b) was not found on PATH; install krunvm " +
        "and buildah (https://github.com/containers/krunvm) and pull the image: buildah pull " +
        settings.krunvmImage,
    );
  }
  const bundle = await options.bundle();
  const release = await slots.acquire({ signal: request.signal, onQueued: request.onQueued });
  const vm = guestName();
  try {
    const created = await runTool(krunvm, [
      "create",
      settings.krunvmImage,
      "--name",
      vm,
      "--mem",
      String(settings.krunvmMemMb),
      "--workdir",
      "/",
    ], { timeoutMs: CREATE_TIMEOUT_MS, signal: request.signal });
    if (created.code !== 0) {
      // Killed half-way, it may have stored the VM: delete it, whatever it got to.
      if (created.code === -1) await deleteVm(krunvm, vm);
      if (request.signal?.aborted) throw request.signal.reason;
      throw microvmUnavailable(
        `krunvm could not create a VM from the image '${settings.krunvmImage}' ` +
          `(SVC_WORKFLOW_MICROVM_KRUNVM_IMAGE; krunvm: ${toolMessage(created)}); make the image ` +
          `available with: buildah pull ${settings.krunvmImage}`,
      );
    }
  } catch (error) {
    release();
    throw error;
  }
  let child;
  try {
    child = spawnTool(krunvm, [
      "start",
      vm,
      ...guestCommand(settings, request, { bundle, marker: vm }).flatMap((arg, i) =>
        i === 0 ? [arg, "--"] : [arg]
      ),
    ]);
  } catch (error) {
    await deleteVm(krunvm, vm);
    release();
    throw error;
  }
  sendBundle(child, bundle);
  let disposed: Promise<void> | undefined;
  const process = child;
  return {
    process,
    sandbox: { kind: "microvm", hardened: true, note: "krunvm: a VM of its own for this run" },
    dispose() {
      disposed ??= (async () => {
        // The VM lives in the `krunvm start` process: killing it stops the guest and its kernel.
        process.kill("SIGKILL");
        await settled(process, KILL_WAIT_MS);
        await deleteVm(krunvm, vm);
        release();
      })();
      return disposed;
    },
  };
}
