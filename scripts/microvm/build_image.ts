/**
 * Builds the `qemu` backend's image into a cache directory keyed by its inputs
 * (image_inputs.ts): the ELF kernel, a small initramfs (busybox, the init, the virtio modules)
 * and a read-only squashfs root (Deno, the libraries `ldd` names, stage 0, the import map). Every
 * file is written with fixed owners, modes and times, so the same inputs give the same bytes.
 * @module
 */
import {
  guestImportMap,
  lddPaths,
  QEMU_GUEST_DENO,
  QEMU_GUEST_IMPORT_MAP,
  QEMU_GUEST_MODULES,
  QEMU_GUEST_STAGE0,
  QEMU_IMAGE_FILES,
  qemuInitScript,
} from "../../src/isolation/mod.ts";
import { type ImageInputs, imageInputs, imageKey } from "./image_inputs.ts";
import { extractVmlinux } from "./vmlinux.ts";

/** Options of {@linkcode buildImage}. */
export interface BuildImageOptions {
  /** The cache: each image in `<cacheDir>/<key>`, and `<cacheDir>/current` naming the newest. */
  cacheDir: string;
  /** The Deno binary copied into the image. @default the one running the build */
  deno?: string;
  /** Hears progress lines. @default none */
  log?: (line: string) => void;
}

/** What {@linkcode buildImage} made or found. */
export interface BuiltImage {
  /** The image's directory. */
  dir: string;
  /** Its key. */
  key: string;
  /** Whether the cache held it already (nothing was built). */
  cached: boolean;
  /** The manifest written beside it. */
  manifest: ImageManifest;
}

/** `manifest.json` of an image. */
export interface ImageManifest {
  key: string;
  inputs: ImageInputs;
  /** Bytes of each image file. */
  sizes: Record<string, number>;
  /** Seconds the build took. */
  build_seconds: number;
}

async function run(command: string, args: string[], cwd?: string): Promise<string> {
  const result = await new Deno.Command(command, { args, cwd, stderr: "piped" }).output();
  if (!result.success) {
    const message = new TextDecoder().decode(result.stderr).trim().split("\n").slice(-3).join("; ");
    throw new Error(`Cannot build the micro-VM image: ${command} failed: ${message}`);
  }
  return new TextDecoder().decode(result.stdout);
}

/** Sets every path under `dir` (symbolic links too) to the epoch: archives carry no build time. */
async function zeroTimes(dir: string): Promise<void> {
  await run("find", [dir, "-exec", "touch", "-h", "-d", "@0", "{}", "+"]);
}

async function put(path: string, data: Uint8Array | string, mode: number): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  if (typeof data === "string") await Deno.writeTextFile(path, data);
  else await Deno.writeFile(path, data);
  await Deno.chmod(path, mode);
}

/** The initramfs tree: `/init`, busybox and the modules, as a gzipped newc cpio archive. */
async function buildInitramfs(stage: string, inputs: ImageInputs, out: string): Promise<void> {
  const tree = `${stage}/initramfs`;
  for (const dir of ["bin", "dev", "proc", "sys", "mnt", "lib/modules"]) {
    await Deno.mkdir(`${tree}/${dir}`, { recursive: true });
  }
  await put(`${tree}/init`, qemuInitScript(), 0o755);
  await put(`${tree}/bin/busybox`, await Deno.readFile("/bin/busybox"), 0o755);
  for (const applet of ["sh", "mount", "umount", "insmod", "cat", "sleep", "env", "chroot"]) {
    await Deno.symlink("busybox", `${tree}/bin/${applet}`);
  }
  for (const applet of ["reboot", "sync", "printf"]) {
    await Deno.symlink("busybox", `${tree}/bin/${applet}`);
  }
  const modules = `/lib/modules/${inputs.kernelRelease}`;
  const dep = await Deno.readTextFile(`${modules}/modules.dep`);
  for (const name of QEMU_GUEST_MODULES) {
    const path = dep.split("\n").map((line) => line.split(":")[0]!)
      .find((path) => path.endsWith(`/${name}.ko`));
    if (path === undefined) throw new Error(`Cannot build the micro-VM image: no module ${name}`);
    await put(`${tree}/lib/modules/${name}.ko`, await Deno.readFile(`${modules}/${path}`), 0o644);
  }
  await zeroTimes(tree);
  await run("sh", [
    "-c",
    `find . | LC_ALL=C sort | cpio --quiet -o -H newc --reproducible -R 0:0 | gzip -n -9 > "$1"`,
    "sh",
    out,
  ], tree);
}

/** The read-only root: Deno and what `ldd` names at their own paths, stage 0, the import map. */
async function buildRootfs(stage: string, inputs: ImageInputs, out: string): Promise<void> {
  const tree = `${stage}/rootfs`;
  for (const dir of ["dev", "tmp", "svc", "usr/bin"]) {
    await Deno.mkdir(`${tree}/${dir}`, { recursive: true });
  }
  await put(`${tree}${QEMU_GUEST_DENO}`, await Deno.readFile(inputs.deno.path), 0o755);
  for (const library of lddPaths(await run("ldd", [inputs.deno.path]))) {
    await put(`${tree}${library}`, await Deno.readFile(library), 0o755);
  }
  const stage0 = await Deno.readTextFile(new URL("../../guest/stage0.js", import.meta.url));
  await put(`${tree}${QEMU_GUEST_STAGE0}`, stage0, 0o644);
  await put(`${tree}${QEMU_GUEST_IMPORT_MAP}`, guestImportMap(), 0o644);
  await zeroTimes(tree);
  // Uncompressed: under emulation, decompressing Deno at each boot costs more than reading it.
  await run("mksquashfs", [
    tree,
    out,
    "-noappend",
    "-quiet",
    "-no-progress",
    "-all-root",
    "-noI",
    "-noId",
    "-noD",
    "-noF",
    "-noX",
    "-mkfs-time",
    "0",
    "-all-time",
    "0",
    "-processors",
    "1",
  ]);
}

/** Points `<cacheDir>/current` at `key`, atomically. */
async function markCurrent(cacheDir: string, key: string): Promise<void> {
  const temp = `${cacheDir}/.current-${Deno.pid}`;
  await Deno.remove(temp).catch(() => {});
  await Deno.symlink(key, temp);
  await Deno.rename(temp, `${cacheDir}/current`);
}

/**
 * Builds the image of the inputs found here into `options.cacheDir`, unless the cache holds it
 * already. A build goes to a private directory first and is renamed into place whole.
 */
export async function buildImage(options: BuildImageOptions): Promise<BuiltImage> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const inputs = await imageInputs(options.deno);
  const key = await imageKey(inputs);
  const dir = `${options.cacheDir}/${key}`;
  await Deno.mkdir(options.cacheDir, { recursive: true });
  try {
    const manifest = JSON.parse(
      await Deno.readTextFile(`${dir}/${QEMU_IMAGE_FILES.manifest}`),
    ) as ImageManifest;
    await markCurrent(options.cacheDir, key);
    return { dir, key, cached: true, manifest };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  log(`building the micro-VM image ${key}`);
  const stage = await Deno.makeTempDir({ dir: options.cacheDir, prefix: ".build-" });
  try {
    const out = `${stage}/image`;
    await Deno.mkdir(out);
    const vmlinuz = await Deno.readFile(`/boot/vmlinuz-${inputs.kernelRelease}`);
    await put(`${out}/${QEMU_IMAGE_FILES.kernel}`, extractVmlinux(vmlinuz), 0o644);
    await buildInitramfs(stage, inputs, `${out}/${QEMU_IMAGE_FILES.initramfs}`);
    await buildRootfs(stage, inputs, `${out}/${QEMU_IMAGE_FILES.rootfs}`);
    const sizes: Record<string, number> = {};
    for (
      const name of [QEMU_IMAGE_FILES.kernel, QEMU_IMAGE_FILES.initramfs, QEMU_IMAGE_FILES.rootfs]
    ) {
      sizes[name] = (await Deno.stat(`${out}/${name}`)).size;
    }
    const manifest: ImageManifest = {
      key,
      inputs,
      sizes,
      build_seconds: Math.round((performance.now() - started) / 100) / 10,
    };
    await Deno.writeTextFile(
      `${out}/${QEMU_IMAGE_FILES.manifest}`,
      JSON.stringify(manifest, null, 2) + "\n",
    );
    await Deno.rename(out, dir).catch(async (error) => {
      // Another build of the same key won: its image is the same.
      if (!(await Deno.stat(dir).catch(() => undefined))) throw error;
    });
    await markCurrent(options.cacheDir, key);
    return { dir, key, cached: false, manifest };
  } finally {
    await Deno.remove(stage, { recursive: true }).catch(() => {});
  }
}
