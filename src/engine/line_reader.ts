// The bounded line reader lives in src/streams/, shared by the engine and the harness providers.
export { type ReadLine, readLines } from "../streams/mod.ts";
