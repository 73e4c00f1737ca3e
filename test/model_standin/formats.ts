/**
 * The wire formats the stand-in serves, one module each.
 * @module
 */
import { OPENAI_CHAT } from "./openai_chat.ts";
import type { WireFormatHandler } from "./types.ts";

/** Every format, tried in order against a request's method and path. */
export const FORMATS: readonly WireFormatHandler[] = [
  OPENAI_CHAT,
];
