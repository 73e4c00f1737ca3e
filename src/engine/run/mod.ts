/**
 * The parts of running a workflow that are not its lifecycle: the manager's options, a
 * request's preparation, one run's execution and end, resume and replay requests and guest
 * priming. The run manager composes them.
 * @module
 */
export { type ExecuteContext, executeRun, type RunScript } from "./execute.ts";
export { finishFromOutcome, finishRun, type RunEndContext } from "./finish.ts";
export { type GuestHandlerContext, guestHandlers } from "./guest_handlers.ts";
export {
  GUEST_CPU_GRACE_S,
  GUEST_SEED,
  guestClock,
  primeGuest,
  type PrimeGuestOptions,
} from "./guest_prime.ts";
export {
  type ResolvedRunOptions,
  resolveRunOptions,
  type RunManagerLedger,
  type RunManagerOptions,
} from "./options.ts";
export {
  type PrepareContext,
  type PreparedRun,
  type PrepareOptions,
  prepareRun,
  recordRun,
  refusedRun,
} from "./prepare.ts";
export {
  queuedRequest,
  type RebuiltRequest,
  type ReplayReader,
  replayRequest,
  replaySource,
  resumeRequest,
} from "./replay.ts";
export { newRunStatus, type NewRunStatusOptions } from "./status.ts";
export { STARTED_BY_CHARS, startedBy } from "./started_by.ts";
export { MAX_SCRIPT_FILE_BYTES } from "./script_source.ts";
