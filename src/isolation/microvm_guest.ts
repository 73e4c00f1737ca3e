import type { ChildProcess } from "../platform/mod.ts";
import { buildGuestBundle, type GuestBundle, importMapUrl } from "./guest_bundle.ts";
import type { MicrovmSettings } from "./microvm_config.ts";
import type { GuestSpawnRequest } from "./types.ts";
import { defaultBootstrapPath, GUEST_RUNTIME_FLAGS } from "./unsafe_local.ts";

/**
 * The guest's environment inside the VM, set by `env -i` so that nothing of the VM's own
 * (an image's `ENV DENO_DIR`, a login shell's variables) reaches it. DENO_DIR is a device, not a
 * directory: whatever Deno would keep there fails, as in the local tier.
 */
const GUEST_ENV = [
  "DENO_DIR=/dev/null",
  "DENO_NO_PACKAGE_JSON=1",
  "DENO_NO_UPDATE_CHECK=1",
  "NO_COLOR=1",
];

/** A fresh name for one guest: its VM's (krunvm) or its process's marker (Lima). */
export function guestName(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `svc-guest-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The command line that runs a guest inside a VM: `env -i` with {@linkcode GUEST_ENV}, then the
 * VM's Deno with the local tier's flags, the import map and stage 0 as `data:` URLs. No host path
 * appears in it; `marker` (see {@linkcode importMapUrl}) lets the host find the process again.
 */
export function guestCommand(
  settings: MicrovmSettings,
  request: GuestSpawnRequest,
  options: { bundle: GuestBundle; marker: string },
): string[] {
  return [
    "/usr/bin/env",
    "-i",
    ...GUEST_ENV,
    settings.guestDeno,
    "run",
    ...GUEST_RUNTIME_FLAGS,
    `--seed=${request.seed}`,
    `--v8-flags=--max-old-space-size=${request.heapMb}`,
    `--import-map=${importMapUrl(options.marker)}`,
    options.bundle.stage0Url,
  ];
}

/** The guest modules' bundle, built once per bootstrap and kept. */
export function bundleLoader(bootstrap = defaultBootstrapPath()): () => Promise<GuestBundle> {
  let bundle: Promise<GuestBundle> | undefined;
  return () => {
    bundle ??= buildGuestBundle(bootstrap);
    bundle.catch(() => (bundle = undefined));
    return bundle;
  };
}

/**
 * Queues the bundle on the guest's stdin ahead of the bridge and lets go of the stream for the
 * session, whose init frame queues behind it. Nothing waits for the guest to read it: a tool that
 * hangs before its guest reads never holds the spawn, which the run's timeout could not end.
 */
export function sendBundle(child: ChildProcess, bundle: GuestBundle): void {
  const writer = child.stdin.getWriter();
  // A guest that died first shows as a crash through its exit status, not here.
  writer.write(bundle.bytes).catch(() => {});
  writer.releaseLock();
}

/** Waits for a killed process at most `ms`: a tool that hangs never holds a teardown forever. */
export async function settled(child: ChildProcess, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    child.status.catch(() => {}),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}
