/**
 * `deno task microvm:image [--cache-dir DIR]`: builds the image of the microvm tier's `qemu`
 * backend from Debian's packages and the pinned Deno (scripts/microvm/build_image.ts), or finds
 * it in the cache. Prints progress to stderr and the image's directory as the last line of
 * stdout, for `SVC_WORKFLOW_MICROVM_QEMU_IMAGE`. Default cache: `$SVC_HOME/microvm`
 * (`~/.svc/microvm`).
 * @module
 */
import { buildImage } from "./microvm/build_image.ts";
import { runTask } from "./task_failure.ts";

function cacheDir(args: string[]): string {
  const index = args.indexOf("--cache-dir");
  if (index >= 0 && args[index + 1]) return args[index + 1]!;
  const home = Deno.env.get("SVC_HOME") || `${Deno.env.get("HOME") ?? "/root"}/.svc`;
  return `${home}/microvm`;
}

if (import.meta.main) {
  await runTask("build the micro-VM image", async () => {
    const image = await buildImage({
      cacheDir: cacheDir(Deno.args),
      log: (line) => console.error(line),
    });
    const { sizes, build_seconds } = image.manifest;
    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    console.error(
      `${image.cached ? "cached" : "built"} ${image.key}: ` +
        Object.entries(sizes).map(([name, size]) => `${name} ${mb(size)}`).join(", ") +
        (image.cached ? "" : `, in ${build_seconds} s`),
    );
    console.log(image.dir);
  });
}
