import { platform } from "../platform/mod.ts";

/** The bundled review workflow's file name, as the run shows it. */
export const REVIEW_FILENAME = "svc-review.js";
/** The bundled review workflow's `meta.name`: the name review runs carry. */
export const REVIEW_WORKFLOW_NAME = "svc-review";

/**
 * Path of the bundled review workflow, shipped beside the host's sources like the guest
 * bootstrap: in a checkout, in the npm package (`bundled/` ships as files) and in a compiled
 * binary (embedded with `--include bundled/`).
 */
export function defaultReviewScriptPath(): string {
  return decodeURIComponent(new URL("../../bundled/svc-review.js", import.meta.url).pathname);
}

/** The review workflow's source, read through the platform. */
export async function readReviewScript(path: string = defaultReviewScriptPath()): Promise<string> {
  return await platform().readTextFile(path);
}
