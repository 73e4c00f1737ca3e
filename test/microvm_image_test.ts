// The `qemu` backend's image build (scripts/microvm_image.ts): keyed by its inputs, a cache hit
// builds nothing, the same inputs give the same bytes, and the image holds what the VM needs.
// It needs Debian's packages (docs/ISOLATION.md, "qemu"); CI installs them and names the image it built
// (SVC_TEST_QEMU), and there these tests must run.
import assert from "node:assert/strict";
import { buildImage } from "../scripts/microvm/build_image.ts";
import { imageInputs, imageKey } from "../scripts/microvm/image_inputs.ts";
import {
  QEMU_GUEST_DENO,
  QEMU_GUEST_IMPORT_MAP,
  QEMU_GUEST_MODULES,
  QEMU_GUEST_STAGE0,
  QEMU_IMAGE_FILES,
} from "../src/isolation/mod.ts";
import { tempDir } from "./helpers.ts";

const available = await imageInputs().then(() => true, (error) => {
  if (Deno.env.get("SVC_TEST_QEMU")) throw error;
  return false;
});
const IGNORED = available ? "" : " (ignored: the image's Debian packages are not installed)";

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function listing(command: string): Promise<string[]> {
  const out = await new Deno.Command("sh", { args: ["-c", command], stderr: "inherit" }).output();
  assert.equal(out.code, 0, command);
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => line !== "");
}

/** Whether the ELF holds the PVH entry note (Xen note type 18) that `-M microvm` boots by. */
function hasPvhNote(elf: Uint8Array): boolean {
  const pattern = [4, 0, 0, 0, -1, 0, 0, 0, 18, 0, 0, 0, 0x58, 0x65, 0x6e, 0];
  outer: for (let i = 0; i + pattern.length <= elf.length; i += 4) {
    for (let j = 0; j < pattern.length; j++) {
      if (pattern[j] !== -1 && elf[i + j] !== pattern[j]) continue outer;
    }
    return true;
  }
  return false;
}

Deno.test({
  name: `microvm image: the same inputs give the same key, a changed one another${IGNORED}`,
  ignore: !available,
  async fn() {
    const [a, b] = [await imageInputs(), await imageInputs()];
    assert.equal(await imageKey(a), await imageKey(b));
    assert.match(await imageKey(a), /^[0-9a-f]{24}$/);
    const changed = { ...a, files: { ...a.files, "guest/stage0.js": "0".repeat(64) } };
    assert.notEqual(await imageKey(changed), await imageKey(a));
    const otherKernel = { ...a, packages: { ...a.packages, "linux-image-cloud-amd64": "0" } };
    assert.notEqual(await imageKey(otherKernel), await imageKey(a));
    // Where the Deno binary lies is no input: only what it is.
    const moved = { ...a, deno: { ...a.deno, path: "/elsewhere/deno" } };
    assert.equal(await imageKey(moved), await imageKey(a));
  },
});

Deno.test({
  name: `microvm image: built twice it is the same bytes, and a cache hit builds nothing${IGNORED}`,
  ignore: !available,
  async fn() {
    await using one = await tempDir("svc-image-");
    await using two = await tempDir("svc-image-");
    const first = await buildImage({ cacheDir: one.path });
    assert.equal(first.cached, false);
    assert.equal(await Deno.realPath(`${one.path}/current`), await Deno.realPath(first.dir));
    const second = await buildImage({ cacheDir: two.path });
    assert.equal(second.key, first.key);
    for (
      const name of [QEMU_IMAGE_FILES.kernel, QEMU_IMAGE_FILES.initramfs, QEMU_IMAGE_FILES.rootfs]
    ) {
      assert.equal(
        await sha256(`${second.dir}/${name}`),
        await sha256(`${first.dir}/${name}`),
        name,
      );
    }
    const before = (await Deno.stat(`${first.dir}/${QEMU_IMAGE_FILES.rootfs}`)).mtime;
    const hit = await buildImage({ cacheDir: one.path });
    assert.equal(hit.cached, true);
    assert.equal(hit.dir, first.dir);
    assert.deepEqual((await Deno.stat(`${first.dir}/${QEMU_IMAGE_FILES.rootfs}`)).mtime, before);
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(one.path))).map((e) => e.name).sort(),
      [
        first.key,
        "current",
      ].sort(),
    );
    // The image CI built (SVC_TEST_QEMU) is the same bytes when its inputs are the same.
    const named = Deno.env.get("SVC_TEST_QEMU");
    if (named && (await Deno.realPath(named)).endsWith(`/${first.key}`)) {
      assert.equal(
        await sha256(`${named}/${QEMU_IMAGE_FILES.rootfs}`),
        await sha256(`${first.dir}/${QEMU_IMAGE_FILES.rootfs}`),
      );
    }

    // What the VM needs, and nothing of the host beyond it.
    const elf = await Deno.readFile(`${first.dir}/${QEMU_IMAGE_FILES.kernel}`);
    assert.deepEqual([...elf.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46]);
    assert.ok(hasPvhNote(elf), "vmlinux has no PVH entry note");
    const initramfs = await listing(
      `gzip -dc '${first.dir}/${QEMU_IMAGE_FILES.initramfs}' | cpio -t --quiet`,
    );
    for (const path of ["init", "bin/busybox", "bin/sh", "bin/insmod", "dev", "proc", "mnt"]) {
      assert.ok(initramfs.includes(path), `initramfs lacks ${path}`);
    }
    for (const name of QEMU_GUEST_MODULES) {
      assert.ok(initramfs.includes(`lib/modules/${name}.ko`), `initramfs lacks ${name}.ko`);
    }
    const rootfs = (await listing(`unsquashfs -lc '${first.dir}/${QEMU_IMAGE_FILES.rootfs}'`))
      .map((line) => line.replace(/^squashfs-root/, ""));
    for (const path of [QEMU_GUEST_DENO, QEMU_GUEST_STAGE0, QEMU_GUEST_IMPORT_MAP]) {
      assert.ok(rootfs.includes(path), `rootfs lacks ${path}`);
    }
    assert.ok(rootfs.some((path) => /^\/lib(64|\/x86_64-linux-gnu)\/ld-linux/.test(path)));
    assert.ok(rootfs.some((path) => path.endsWith("/libc.so.6")));
    assert.ok(!rootfs.some((path) => /^\/(etc|home|root|proc)\b/.test(path)), rootfs.join(" "));
    const manifest = JSON.parse(
      await Deno.readTextFile(`${first.dir}/${QEMU_IMAGE_FILES.manifest}`),
    );
    assert.equal(manifest.key, first.key);
    assert.ok(manifest.sizes[QEMU_IMAGE_FILES.rootfs] > 50e6);
  },
});
