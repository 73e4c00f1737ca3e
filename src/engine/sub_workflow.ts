import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { checkScript } from "./script_check.ts";

/** A sub-workflow ready for the guest: its checked body and the file name errors should show. */
export interface ResolvedWorkflow {
  body: string;
  filename: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

/** Normalises `a/./b/../c` segments; returns undefined when `..` climbs above the start. */
function normalise(segments: string[]): string[] | undefined {
  const out: string[] = [];
  for (const segment of segments) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (out.length === 0) return undefined;
      out.pop();
    } else out.push(segment);
  }
  return out;
}

/**
 * Finds and checks the script of `workflow(nameOrRef)`. A name (`review`) is
 * `workflows/<name>.js` of the project, then of `SVC_HOME`; a ref (`./lib/review.js`) is a
 * relative path inside the project. Every failure is an SvcError with a message for the script.
 */
export async function resolveWorkflow(
  nameOrRef: string,
  options: { projectDir: string; home: string },
): Promise<ResolvedWorkflow> {
  const candidates: string[] = [];
  let display: string;
  if (NAME.test(nameOrRef)) {
    display = `${nameOrRef}.js`;
    candidates.push(
      joinPath(options.projectDir, "workflows", display),
      joinPath(options.home, "workflows", display),
    );
  } else if (nameOrRef.startsWith("./") || nameOrRef.startsWith("../")) {
    const segments = normalise(nameOrRef.split("/"));
    if (!segments || !nameOrRef.endsWith(".js")) {
      throw new SvcError(
        "invalid_argument",
        `workflow(): '${nameOrRef}' must be a relative path to a .js file inside the project directory`,
      );
    }
    display = segments.join("/");
    candidates.push(joinPath(options.projectDir, display));
  } else {
    throw new SvcError(
      "invalid_argument",
      `workflow(): '${nameOrRef}' is neither a workflow name (letters, digits, _ and -) nor a relative path like ./sub.js`,
    );
  }
  const p = platform();
  for (const path of candidates) {
    let source: string;
    try {
      source = await p.readTextFile(path);
    } catch {
      continue;
    }
    const checked = checkScript(source, { filename: display });
    return { body: checked.body, filename: display };
  }
  throw new SvcError(
    "not_found",
    `workflow(): no workflow '${nameOrRef}' (looked for ${candidates.join(", ")})`,
  );
}
