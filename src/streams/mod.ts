/**
 * Stream helpers: the bounded line reader shared by the engine (guest frames) and the harness
 * providers (a coding agent's JSON lines), and the merge of two endless sources that the
 * general event stream follows as one.
 * @module
 */
export { type ReadLine, readLines } from "./line_reader.ts";
export { mergeSources } from "./merge_sources.ts";
