/**
 * What a run request runs: its `script` text, or a saved workflow of the project it names, as
 * Claude Code's Workflow tool takes them (`scriptPath` first, then `name`, then `script`).
 * @module
 */
import { SvcError, toSvcError } from "../../errors/mod.ts";
import { readCheckedFile } from "../../workspace/mod.ts";
import type { WorkflowRunRequest } from "../../schemas/mod.ts";
import { locateWorkflow, type WorkflowPlaces } from "../sub_workflow.ts";

/** The largest script file a run reads: Claude Code's limit of a script's size. */
export const MAX_SCRIPT_FILE_BYTES = 512 * 1024;

/** A request whose script is text. */
export type ScriptRequest = WorkflowRunRequest & { script: string };

/** A request with its script read in, and what a person should hear about how. */
export interface ScriptSource {
  /** The request, its `script` the text that runs (and its file's name and folder). */
  request: ScriptRequest;
  /** What the request named but does not run (overruled by `scriptPath` or `name`). */
  warnings: string[];
}

/** The fields a request named beside the one that wins, for the warning. */
function overruled(request: WorkflowRunRequest, winner: "scriptPath" | "name"): string[] {
  const fields = winner === "scriptPath" ? ["name", "script"] : ["script"];
  return fields.filter((field) => request[field as keyof WorkflowRunRequest] !== undefined);
}

/** A run refused because of what `name`/`scriptPath` found, in the run's own words. */
function refusal(error: unknown): SvcError {
  const e = toSvcError(error);
  return new SvcError(e.code, `Cannot start the run: ${e.message.replace(/^workflow\(\): /, "")}`);
}

/**
 * The request with its script's text: `script` as given, or read from the saved workflow that
 * `scriptPath` (a path from the project's root, or absolute inside it) or `name` (its
 * `meta.name`, else its file name) names among `places` (the run's project, the user's and
 * svc's workflows), with the file's name and folder as `filename` and `script_dir`. The file is
 * found as `workflow()` finds one, with the same containment checks, and is at most
 * {@linkcode MAX_SCRIPT_FILE_BYTES}. Refusals name folders by role, never by host path.
 */
export async function scriptSource(
  request: WorkflowRunRequest,
  places: WorkflowPlaces,
): Promise<ScriptSource> {
  const ref = request.scriptPath !== undefined ? { scriptPath: request.scriptPath } : request.name;
  if (ref === undefined) return { request: { ...request, script: request.script! }, warnings: [] };
  const winner = typeof ref === "string" ? "name" : "scriptPath";
  let located: { real: string; filename: string };
  let script: string;
  try {
    located = await locateWorkflow(ref, places);
    // The checked file itself, from one open handle: a swap since the check is refused.
    script = await readCheckedFile(located.real, {
      maxBytes: MAX_SCRIPT_FILE_BYTES,
      shown: `'${located.filename}'`,
    });
  } catch (error) {
    throw refusal(error);
  }
  const slash = located.real.lastIndexOf("/");
  const ignored = overruled(request, winner);
  return {
    request: {
      ...request,
      script,
      filename: located.filename.slice(located.filename.lastIndexOf("/") + 1),
      script_dir: located.real.slice(0, slash) || "/",
    },
    warnings: ignored.length === 0 ? [] : [
      `${ignored.map((f) => `'${f}'`).join(" and ")} ignored: '${winner}' names what runs`,
    ],
  };
}
