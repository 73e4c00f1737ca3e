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

/** A file `workflow()` may read, and the folders its real path must stay inside. */
interface Candidate {
  path: string;
  /** Folders (as named, resolved before the check) that must hold the file's real path. */
  within: string[];
  /** What those folders are, for the error. */
  where: string;
}

function inside(path: string, dir: string): boolean {
  return path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/**
 * The real path of a candidate, with every symbolic link resolved; undefined when there is no
 * such file. Throws when the real path leaves the folders the candidate must stay in: a link
 * inside the project must not hand the script a file from elsewhere.
 */
async function realCandidate(
  candidate: Candidate,
  nameOrRef: string,
): Promise<string | undefined> {
  const p = platform();
  let real: string;
  try {
    real = await p.realPath(candidate.path);
  } catch {
    return undefined;
  }
  for (const dir of candidate.within) {
    if (!inside(real, await p.realPath(dir))) {
      throw new SvcError(
        "invalid_argument",
        `workflow(): '${nameOrRef}' leads outside ${candidate.where} through a symbolic link`,
      );
    }
  }
  return real;
}

/**
 * Finds and checks the script of `workflow(nameOrRef)`. A name (`review`) is
 * `workflows/<name>.js` of the project, then of `SVC_HOME`; a ref (`./lib/review.js`) is a
 * relative path inside the project. The file is read at its real path, and only when that path
 * stays inside the project (and, for a name, inside the `workflows/` folder it was found in).
 * Every failure is an SvcError with a message for the script.
 */
export async function resolveWorkflow(
  nameOrRef: string,
  options: { projectDir: string; home: string },
): Promise<ResolvedWorkflow> {
  const candidates: Candidate[] = [];
  let display: string;
  if (NAME.test(nameOrRef)) {
    display = `${nameOrRef}.js`;
    const projectWorkflows = joinPath(options.projectDir, "workflows");
    const homeWorkflows = joinPath(options.home, "workflows");
    candidates.push(
      {
        path: joinPath(projectWorkflows, display),
        within: [projectWorkflows, options.projectDir],
        where: "the project's workflows folder",
      },
      {
        path: joinPath(homeWorkflows, display),
        within: [homeWorkflows],
        where: "SVC_HOME's workflows folder",
      },
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
    candidates.push({
      path: joinPath(options.projectDir, display),
      within: [options.projectDir],
      where: "the project directory",
    });
  } else {
    throw new SvcError(
      "invalid_argument",
      `workflow(): '${nameOrRef}' is neither a workflow name (letters, digits, _ and -) nor a relative path like ./sub.js`,
    );
  }
  const p = platform();
  for (const candidate of candidates) {
    const real = await realCandidate(candidate, nameOrRef);
    if (real === undefined) continue;
    let source: string;
    try {
      source = await p.readTextFile(real);
    } catch {
      continue;
    }
    const checked = checkScript(source, { filename: display });
    return { body: checked.body, filename: display };
  }
  throw new SvcError(
    "not_found",
    `workflow(): no workflow '${nameOrRef}' (looked for ${
      candidates.map((c) => c.path).join(", ")
    })`,
  );
}
