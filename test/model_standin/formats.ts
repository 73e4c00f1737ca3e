/**
 * The wire formats the stand-in serves, one module each.
 * @module
 */
import { GEMINI_FORMAT } from "./gemini.ts";
import type { WireFormatHandler } from "./types.ts";

/** Every format, tried in order against a request's method and path. */
export const FORMATS: readonly WireFormatHandler[] = [
  GEMINI_FORMAT,
];
