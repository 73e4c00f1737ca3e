/**
 * The platform seam: the one place that reaches the runtime. Other modules call
 * {@linkcode platform}; the npm build swaps the implementation with {@linkcode setPlatform}.
 * @module
 */
import { denoPlatform } from "./deno.ts";
import type { Platform } from "./types.ts";

export type {
  ChildProcess,
  ExitStatus,
  FileInfo,
  KvAtomic,
  KvEntry,
  KvKey,
  KvKeyPart,
  KvStore,
  Platform,
  SpawnOptions,
} from "./types.ts";

let current: Platform = denoPlatform;

/** The platform the host runs on. */
export function platform(): Platform {
  return current;
}

/** Replaces the platform implementation (the Node entry point calls this once at start). */
export function setPlatform(implementation: Platform): void {
  current = implementation;
}

/** Joins path segments with `/`, collapsing duplicate separators. */
export function joinPath(...parts: string[]): string {
  return parts.join("/").replace(/\/{2,}/g, "/");
}
