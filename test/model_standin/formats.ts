/**
 * The wire formats the stand-in serves, one module each.
 * @module
 */
import { ANTHROPIC } from "./anthropic.ts";
import { GEMINI_FORMAT } from "./gemini.ts";
import { OPENAI_CHAT } from "./openai_chat.ts";
import { OPENAI_RESPONSES } from "./openai_responses.ts";
import type { WireFormatHandler } from "./types.ts";

/** Every format, tried in order against a request's method and path. */
export const FORMATS: readonly WireFormatHandler[] = [
  ANTHROPIC,
  OPENAI_RESPONSES,
  OPENAI_CHAT,
  GEMINI_FORMAT,
];
