/**
 * Byte streams: the bounded line reader shared by the engine (guest frames) and the harness
 * providers (a coding agent's JSON lines).
 * @module
 */
export { type ReadLine, readLines } from "./line_reader.ts";
