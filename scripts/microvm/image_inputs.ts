/**
 * What a micro-VM image is built from, and the key that names it in the cache: the Debian
 * packages' versions, the Deno binary's digest, the guest's files (stage 0, the import map, the
 * init) and the build's own sources. The same inputs give the same key, and a changed one a new
 * key, so a cached image is reused exactly while it is still what a build would make.
 * @module
 */
import { guestImportMap, qemuInitScript } from "../../src/isolation/mod.ts";

/** The Debian packages of the image, installed with `--no-install-recommends`. */
export const IMAGE_PACKAGES: readonly string[] = [
  "qemu-system-x86",
  "linux-image-cloud-amd64",
  "busybox-static",
  "cpio",
  "squashfs-tools",
];

/** The inputs of one image. */
export interface ImageInputs {
  /** Installed version of each package (the kernel's own versioned package included). */
  packages: Record<string, string>;
  /** The kernel release (`uname -r` inside the VM), whose vmlinuz and modules are used. */
  kernelRelease: string;
  /** The Deno binary copied in, its version and SHA-256. */
  deno: { path: string; version: string; sha256: string };
  /** SHA-256 of each guest file and build source, by name. */
  files: Record<string, string>;
}

async function sha256(bytes: Uint8Array | string): Promise<string> {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const digest = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function output(command: string, args: string[]): Promise<string> {
  const result = await new Deno.Command(command, { args, stderr: "piped" }).output();
  if (!result.success) {
    const message = new TextDecoder().decode(result.stderr).trim().split("\n").at(-1);
    throw new Error(`Cannot build the micro-VM image: ${command} ${args.join(" ")}: ${message}`);
  }
  return new TextDecoder().decode(result.stdout);
}

/** The line for packages that are not installed, with the command that installs the image's. */
function notInstalled(missing: readonly string[]): string {
  return `Cannot build the micro-VM image: the ${missing.length === 1 ? "package" : "packages"} ${
    missing.join(", ")
  } ${missing.length === 1 ? "is" : "are"} not installed; ` +
    `install them with: apt-get install -y --no-install-recommends ${IMAGE_PACKAGES.join(" ")}`;
}

/** Versions of `names` as dpkg has them installed; a missing one names the install command. */
async function packageVersions(names: readonly string[]): Promise<Record<string, string>> {
  const versions: Record<string, string> = {};
  const result = await new Deno.Command("dpkg-query", {
    args: ["-W", "-f", "${Package} ${db:Status-Abbrev} ${Version}\\n", ...names],
    stdout: "piped",
    stderr: "null",
  }).output();
  for (const line of new TextDecoder().decode(result.stdout).split("\n")) {
    const [name, status, version] = line.trim().split(/\s+/);
    if (name && status === "ii" && version) versions[name] = version;
  }
  const missing = names.filter((name) => versions[name] === undefined);
  if (missing.length > 0) throw new Error(notInstalled(missing));
  return versions;
}

/** The versioned kernel package the meta package depends on, e.g. `linux-image-6.1.0-56-cloud-amd64`. */
async function kernelPackage(): Promise<string> {
  const query = await new Deno.Command("dpkg-query", {
    args: ["-W", "-f", "${Depends}", "linux-image-cloud-amd64"],
    stdout: "piped",
    stderr: "null",
  }).output();
  // dpkg-query exits 1 for a package it does not know ("no packages found matching").
  if (!query.success) throw new Error(notInstalled(["linux-image-cloud-amd64"]));
  const depends = new TextDecoder().decode(query.stdout);
  const name = /linux-image-[0-9][^\s,(]*/.exec(depends)?.[0];
  if (name === undefined) {
    throw new Error(
      `Cannot build the micro-VM image: linux-image-cloud-amd64 depends on no kernel`,
    );
  }
  return name;
}

/** The build's own sources and the guest files, as `[name, text]`. */
export async function guestFiles(): Promise<[string, string][]> {
  const root = new URL("../../", import.meta.url);
  const read = (path: string) => Deno.readTextFile(new URL(path, root));
  return [
    ["init", qemuInitScript()],
    ["import_map.json", guestImportMap()],
    ["guest/stage0.js", await read("guest/stage0.js")],
    ["scripts/microvm/build_image.ts", await read("scripts/microvm/build_image.ts")],
    ["scripts/microvm/image_inputs.ts", await read("scripts/microvm/image_inputs.ts")],
    ["scripts/microvm/vmlinux.ts", await read("scripts/microvm/vmlinux.ts")],
    ["src/isolation/microvm_qemu_image.ts", await read("src/isolation/microvm_qemu_image.ts")],
  ];
}

/** Reads the inputs of an image with the Deno binary `deno` (default: the one running this). */
export async function imageInputs(deno = Deno.execPath()): Promise<ImageInputs> {
  const kernel = await kernelPackage();
  const packages = await packageVersions([...IMAGE_PACKAGES, kernel]);
  const version = (await output(deno, ["--version"])).split("\n")[0]!.trim();
  const files: Record<string, string> = {};
  for (const [name, text] of await guestFiles()) files[name] = await sha256(text);
  return {
    packages,
    kernelRelease: kernel.slice("linux-image-".length),
    deno: { path: deno, version, sha256: await sha256(await Deno.readFile(deno)) },
    files,
  };
}

/** The cache key of `inputs`: a digest of everything but where the Deno binary lies. */
export async function imageKey(inputs: ImageInputs): Promise<string> {
  const { path: _path, ...deno } = inputs.deno;
  const canonical = JSON.stringify({
    packages: Object.entries(inputs.packages).sort(([a], [b]) => a < b ? -1 : 1),
    kernelRelease: inputs.kernelRelease,
    deno,
    files: Object.entries(inputs.files).sort(([a], [b]) => a < b ? -1 : 1),
  });
  return (await sha256(canonical)).slice(0, 24);
}
