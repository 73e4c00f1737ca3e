/**
 * Scratch directories under `$SVC_HOME/tmp`: each is named after the process that made it, and
 * every host removes, when it starts, those whose process is gone (a host killed with `kill -9`
 * leaves its guests' and calls' directories behind).
 * @module
 */
export {
  makeScratchDir,
  type ScratchDirOptions,
  scratchOwner,
  type SweepOptions,
  sweepScratch,
  UNMARKED_MAX_AGE_MS,
} from "./scratch_dirs.ts";
export { processStart, type ScratchOwner } from "./owner.ts";
