import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { checkScript } from "./script_check.ts";

/** A sub-workflow ready for the guest: its checked body and the file name errors should show. */
export interface ResolvedWorkflow {
  body: string;
  filename: string;
  /** What the check of its meta warned about (unknown fields), one line each. */
  warnings: string[];
}

/** Where workflows are looked up. */
export interface WorkflowPlaces {
  /** The project (the run's workdir): its `.claude/workflows/` and `workflows/`. */
  projectDir: string;
  /** `SVC_HOME`: its `workflows/`. */
  home: string;
  /** The user's home: its `.claude/workflows/`. None when unknown. */
  userHome?: string;
}

/** What `workflow()` was given: a saved workflow's name, or a script file. */
export type WorkflowRef = string | { scriptPath: string };

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
  /**
   * What those folders are, for the error: named by role, never by path (a remote caller's
   * script must not learn where the host keeps its projects, its home or SVC_HOME).
   */
  where: string;
}

function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/** A ref for a message: JSON-quoted only when it holds something a line should not. */
function shown(ref: string): string {
  const clipped = ref.length > 80 ? `${ref.slice(0, 80)}…` : ref;
  // deno-lint-ignore no-control-regex
  return /[\u0000-\u001f\u007f']/.test(clipped) ? JSON.stringify(clipped) : `'${clipped}'`;
}

/**
 * The real path of a candidate, with every symbolic link resolved; undefined when there is no
 * such file. Throws when the real path leaves the folders the candidate must stay in: a link
 * inside the project must not hand the script a file from elsewhere.
 */
async function realCandidate(candidate: Candidate, ref: string): Promise<string | undefined> {
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
        `workflow(): ${shown(ref)} leads outside ${candidate.where} through a symbolic link`,
      );
    }
  }
  return real;
}

/**
 * The files a workflow name may be, in order: the project's `.claude/workflows/<name>.js`
 * (Claude Code's folder) and `workflows/<name>.js` (svc's), then the user's
 * `~/.claude/workflows/<name>.js`, then `$SVC_HOME/workflows/<name>.js`.
 */
function nameCandidates(name: string, places: WorkflowPlaces): Candidate[] {
  const file = `${name}.js`;
  const project = (folder: string[], where: string): Candidate => {
    const dir = joinPath(places.projectDir, ...folder);
    return { path: joinPath(dir, file), within: [dir, places.projectDir], where };
  };
  const own = (dir: string, where: string): Candidate => ({
    path: joinPath(dir, file),
    within: [dir],
    where,
  });
  return [
    project([".claude", "workflows"], "the project's .claude/workflows/ folder"),
    project(["workflows"], "the project's workflows/ folder"),
    ...(places.userHome !== undefined
      ? [
        own(
          joinPath(places.userHome, ".claude", "workflows"),
          "the user's .claude/workflows/ folder",
        ),
      ]
      : []),
    own(joinPath(places.home, "workflows"), "svc's saved workflows"),
  ];
}

/** The folders of `candidates`, by role, for a message: "a, b and c". */
function placesOf(candidates: readonly Candidate[]): string {
  const roles = [...new Set(candidates.map((c) => c.where))];
  return roles.length <= 1
    ? roles.join("")
    : `${roles.slice(0, -1).join(", ")} and ${roles.at(-1)}`;
}

/** The first candidate that exists, at its real path (checked to stay where it must). */
async function firstExisting(
  candidates: Candidate[],
  ref: string,
): Promise<{ real: string; candidate: Candidate } | undefined> {
  for (const candidate of candidates) {
    const real = await realCandidate(candidate, ref);
    if (real === undefined) continue;
    try {
      if (!(await platform().stat(real)).isFile) continue;
    } catch {
      continue;
    }
    return { real, candidate };
  }
  return undefined;
}

/**
 * Finds a saved workflow by name (for `svc workflow run <name>`): the real path of the first of
 * the project's `.claude/workflows/<name>.js` and `workflows/<name>.js`, `~/.claude/workflows/`,
 * `$SVC_HOME/workflows/`. Throws an SvcError (`not_found`) that names every place it looked.
 */
export async function findWorkflow(name: string, places: WorkflowPlaces): Promise<string> {
  if (!NAME.test(name)) {
    throw new SvcError(
      "invalid_argument",
      `Cannot find workflow ${shown(name)}: a name is letters, digits, '_' and '-'`,
    );
  }
  const candidates = nameCandidates(name, places);
  const found = await firstExisting(candidates, name);
  if (found) return found.real;
  throw new SvcError(
    "not_found",
    `Cannot find workflow '${name}': looked for ${name}.js in ${placesOf(candidates)}`,
  );
}

/**
 * The folder relative refs start from, and the folder they must stay in. Refs of a script that
 * came from a file start from that file's folder (`scriptDir`, a real path); they stay inside the
 * project when that folder is in the project, else inside the script's own folder (a workflow of
 * `~/.claude/workflows/` may reach its neighbours, nothing else). Other scripts start and stay
 * in the project.
 */
async function refRoots(
  places: WorkflowPlaces,
  scriptDir: string | undefined,
): Promise<{ root: string; base: string[]; where: string }> {
  const project = await platform().realPath(places.projectDir).catch(() => places.projectDir);
  if (scriptDir === undefined) return { root: project, base: [], where: "the project directory" };
  if (inside(scriptDir, project)) {
    const base = scriptDir.slice(project.length).split("/").filter(Boolean);
    return { root: project, base, where: "the project directory" };
  }
  return { root: scriptDir, base: [], where: "the calling script's folder" };
}

/**
 * Finds and checks the script of `workflow(nameOrRef)`. A name (`review`) is looked up as
 * {@linkcode findWorkflow} says; a ref (`./lib/review.js`, or `{scriptPath: "lib/review.js"}`)
 * is a relative path from the calling script's folder (`scriptDir`), else from the project.
 * The file is read at its real path, and only when that path stays inside the folder it must
 * (see `refRoots`; for a name, the workflows folder it was found in). Every failure is an
 * SvcError with a message for the script.
 */
export async function resolveWorkflow(
  nameOrRef: WorkflowRef,
  options: WorkflowPlaces & { scriptDir?: string },
): Promise<ResolvedWorkflow> {
  const isPath = typeof nameOrRef !== "string";
  const ref = isPath ? nameOrRef.scriptPath : nameOrRef;
  let candidates: Candidate[];
  let display: string;
  if (!isPath && NAME.test(ref)) {
    display = `${ref}.js`;
    candidates = nameCandidates(ref, options);
  } else if (isPath || ref.startsWith("./") || ref.startsWith("../")) {
    const { root, base, where } = await refRoots(options, options.scriptDir);
    const segments = ref.startsWith("/") ? undefined : normalise([...base, ...ref.split("/")]);
    if (!segments || segments.length === 0 || !ref.endsWith(".js")) {
      throw new SvcError(
        "invalid_argument",
        `workflow(): ${shown(ref)} must be a relative path to a .js file inside ${where}`,
      );
    }
    display = segments.join("/");
    candidates = [{ path: joinPath(root, display), within: [root], where }];
  } else {
    throw new SvcError(
      "invalid_argument",
      `workflow(): ${
        shown(ref)
      } is neither a workflow name (letters, digits, _ and -) nor a relative path like ./sub.js`,
    );
  }
  const found = await firstExisting(candidates, ref);
  if (found) {
    let source: string | undefined;
    try {
      source = await platform().readTextFile(found.real);
    } catch {
      source = undefined;
    }
    if (source !== undefined) {
      const checked = checkScript(source, { filename: display });
      return { body: checked.body, filename: display, warnings: checked.warnings };
    }
  }
  throw new SvcError(
    "not_found",
    `workflow(): no workflow ${shown(ref)} (looked for ${display} in ${placesOf(candidates)})`,
  );
}
