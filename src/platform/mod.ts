/**
 * The platform seam: the one place that reaches the runtime. Other modules call
 * {@linkcode platform}; it is the Deno implementation unless an entry point of the npm package
 * installed the Node one (`./node.ts`) with {@linkcode setPlatform} before anything else ran.
 * @module
 */
import { denoPlatform } from "./deno.ts";
import type { Platform } from "./types.ts";

export type {
  ChildProcess,
  ExitStatus,
  FileIdentity,
  FileInfo,
  HttpServer,
  KvAtomic,
  KvCommitOptions,
  KvEntry,
  KvKey,
  KvKeyPart,
  KvStore,
  OpenFile,
  Platform,
  ServeOptions,
  SpawnOptions,
} from "./types.ts";

export { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./types.ts";
export { type BodySource, readBody, readBounded } from "./read_bounded.ts";
export { timingSafeEqual } from "./timing_safe_equal.ts";
export { LIFELINE_SHELL } from "./lifeline.ts";

let current: Platform = denoPlatform;

/** The platform the host runs on. */
export function platform(): Platform {
  return current;
}

/** Replaces the platform implementation (the Node entry point calls this once at start). */
export function setPlatform(implementation: Platform): void {
  current = implementation;
}

/** The folder of a `/`-separated path (`/` for a file at the root). */
export function dirName(path: string): string {
  return path.slice(0, path.lastIndexOf("/")) || "/";
}

/** Joins path segments with `/`, collapsing duplicate separators. */
export function joinPath(...parts: string[]): string {
  return parts.join("/").replace(/\/{2,}/g, "/");
}
