/**
 * The microvm tier's `qemu` backend in real micro-VMs (group `qemu`), measured only where its
 * image exists (`SVC_WORKFLOW_MICROVM_QEMU_IMAGE`, else `SVC_TEST_QEMU`, else the default
 * `$SVC_HOME/microvm/current`): a run's start to its first `agent()` call with a VM booted for
 * it (a one-shot command) and with one already waiting (a long-lived host), and the resident
 * memory of one waiting VM. One VM at a time.
 * @module
 */
import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";

/** How long a waiting VM is given to boot to its init frame before a run takes it. */
const BOOT_WAIT_MS = 12_000;
const SCRIPT = `return await agent("hello");`;
const LOCAL = { owner: "local" };

/** The figures of the group, one sample a run. */
export interface QemuFigures {
  /** The image measured. */
  image: string;
  /** Start to first `agent()` call, the VM booted for the run. */
  coldMs: number[];
  /** Start to first `agent()` call, the run taking a VM that was waiting. */
  warmMs: number[];
  /** Resident memory of one booted, waiting VM (QEMU's RSS), in MiB. */
  rssMiB: number[];
}

/** The image to measure, or undefined when there is none (the group is then skipped). */
export async function qemuImage(): Promise<string | undefined> {
  const home = Deno.env.get("SVC_HOME") || `${Deno.env.get("HOME") ?? "/root"}/.svc`;
  const candidates = [
    Deno.env.get("SVC_WORKFLOW_MICROVM_QEMU_IMAGE"),
    Deno.env.get("SVC_TEST_QEMU"),
    `${home}/microvm/current`,
  ];
  for (const dir of candidates) {
    if (dir && await Deno.stat(`${dir}/rootfs.squashfs`).then(() => true, () => false)) {
      return await Deno.realPath(dir);
    }
  }
  return undefined;
}

/** QEMU processes of `image`, with their RSS in KiB. */
function qemuProcesses(image: string): { pid: number; rssKiB: number }[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid=,rss=,args="] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, , command, ...args]) =>
      /qemu-system/.test(command ?? "") && args.some((a) => a.includes(image))
    )
    .map(([pid, rss]) => ({ pid: Number(pid), rssKiB: Number(rss) }));
}

/** Milliseconds from a run's start to its first `agent()` call. */
async function firstCallMs(manager: RunManager): Promise<number> {
  const started = performance.now();
  const run = await manager.start(
    { script: SCRIPT, isolation: "microvm", fake_dispatch: true },
    LOCAL,
  );
  let ms = Number.NaN;
  for await (const { event } of manager.events(run.run_id, LOCAL)) {
    if (event.type === "call" && Number.isNaN(ms)) ms = performance.now() - started;
  }
  const status = await manager.wait(run.run_id, LOCAL);
  if (status.state !== "succeeded") {
    throw new Error(
      `Cannot measure the qemu backend: a run ${status.state}: ${status.error?.message}`,
    );
  }
  return ms;
}

async function withManager<T>(
  root: string,
  prestartGuest: boolean,
  body: (manager: RunManager) => Promise<T>,
): Promise<T> {
  const home = await Deno.makeTempDir({ dir: root, prefix: "qemu-" });
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
    projectDir: home,
    prestartGuest,
  });
  try {
    return await body(manager);
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** Measures `runs` samples of each figure with the image found by {@linkcode qemuImage}. */
export async function measureQemu(root: string, runs: number): Promise<QemuFigures | undefined> {
  const image = await qemuImage();
  if (image === undefined) return undefined;
  Deno.env.set("SVC_WORKFLOW_MICROVM_BACKEND", "qemu");
  Deno.env.set("SVC_WORKFLOW_MICROVM_QEMU_IMAGE", image);
  const figures: QemuFigures = { image, coldMs: [], warmMs: [], rssMiB: [] };
  for (let i = 0; i < runs; i++) {
    figures.coldMs.push(await withManager(root, false, firstCallMs));
  }
  await withManager(root, true, async (manager) => {
    for (let i = 0; i < runs; i++) {
      await new Promise((resolve) => setTimeout(resolve, BOOT_WAIT_MS));
      const [waiting] = qemuProcesses(image);
      if (waiting) figures.rssMiB.push(waiting.rssKiB / 1024);
      figures.warmMs.push(await firstCallMs(manager));
    }
  });
  return figures;
}
