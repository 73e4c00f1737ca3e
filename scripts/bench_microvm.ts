/**
 * Guest start through the microvm tier's real backend code, with the stand-in `limactl` and
 * `krunvm` of the tests (test/fixtures/microvm) in place of the tools, which cannot be installed
 * here: what svc itself adds to a guest start (the instance check or VM create/delete, the
 * stage 0 and its bundle over stdin), not what a real VM costs.
 * @module
 */
import {
  createMicrovmBackend,
  type MicrovmBackendName,
  MicrovmSlots,
} from "../src/isolation/mod.ts";

/**
 * Milliseconds from spawn to the exit of a guest whose bootstrap is `emptyScript`, through
 * `backend` with its stand-in tool, the VM torn down (dispose) included.
 */
export async function timeMicrovmStandInGuest(
  root: string,
  emptyScript: string,
  backend: MicrovmBackendName,
): Promise<number> {
  const fixtures = decodeURIComponent(
    new URL("../test/fixtures/microvm", import.meta.url).pathname,
  );
  const tools = await Deno.makeTempDir({ dir: root, prefix: "microvm-" });
  const path = Deno.env.get("PATH") ?? "";
  try {
    for (const tool of ["limactl", "krunvm"]) {
      await Deno.copyFile(`${fixtures}/${tool}`, `${tools}/${tool}`);
      await Deno.chmod(`${tools}/${tool}`, 0o755);
    }
    await Deno.mkdir(`${tools}/state/instances`, { recursive: true });
    await Deno.writeTextFile(
      `${tools}/state/instances/bench.json`,
      JSON.stringify({ name: "bench", status: "Running", config: { mounts: [] } }),
    );
    await Deno.writeTextFile(`${tools}/state/images`, "bench-image\n");
    Deno.env.set("PATH", `${tools}:${path}`);
    const microvm = createMicrovmBackend({
      bootstrapPath: emptyScript,
      slots: new MicrovmSlots(1),
      settings: {
        backend,
        guestDeno: Deno.execPath(),
        maxConcurrent: 1,
        limaInstance: "bench",
        krunvmImage: "bench-image",
        krunvmMemMb: 512,
      },
    });
    const t0 = performance.now();
    const guest = await microvm.spawn({ scratchRoot: root, heapMb: 512, seed: 1 });
    try {
      const status = await guest.process.status;
      if (status.code !== 0) throw new Error(`the ${backend} guest exited with ${status.code}`);
    } finally {
      await guest.dispose();
    }
    return performance.now() - t0;
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(tools, { recursive: true }).catch(() => {});
  }
}
