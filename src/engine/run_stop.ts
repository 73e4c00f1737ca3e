/**
 * The engine's old name of the one stop class, {@linkcode StopReason} (`src/dispatch/stop.ts`),
 * which runs and tasks share.
 */
export { StopReason as RunStop } from "../dispatch/mod.ts";
