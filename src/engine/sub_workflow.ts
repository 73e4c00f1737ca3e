import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { readCheckedFile } from "../workspace/mod.ts";
import { fileWithMetaName, MAX_SCANNED_BYTES } from "./meta_name_lookup.ts";
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

/** The largest file `workflow()` reads: Claude Code's limit of a script's size. */
const MAX_WORKFLOW_FILE_BYTES = MAX_SCANNED_BYTES;

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
  /** For a name: the workflows folder whose files' `meta.name` may give it. */
  folder?: string;
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
    return { path: joinPath(dir, file), folder: dir, within: [dir, places.projectDir], where };
  };
  const own = (dir: string, where: string): Candidate => ({
    path: joinPath(dir, file),
    folder: dir,
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
 * The saved workflow called `name`: in each folder in turn, the file whose `meta.name` is
 * `name` (Claude Code's rule), else the file `<name>.js` (svc's, for scripts saved without a
 * meta name). The first folder that has either wins, so the project's workflows shadow the
 * user's and svc's.
 */
async function byName(
  name: string,
  candidates: Candidate[],
): Promise<{ real: string; candidate: Candidate } | undefined> {
  for (const candidate of candidates) {
    const folder = candidate.folder!;
    const real = await fileWithMetaName(folder, name, [folder, ...candidate.within]);
    if (real !== undefined) return { real, candidate };
    const file = await firstExisting([candidate], name);
    if (file) return file;
  }
  return undefined;
}

/**
 * Finds a saved workflow by name (for `svc workflow run <name>`, A2A and a run's `name`): the
 * real path of the first match in the project's `.claude/workflows/` and `workflows/`, then
 * `~/.claude/workflows/`, then `$SVC_HOME/workflows/`; in each, a file whose `meta.name` is
 * `name`, else `<name>.js`. Throws an SvcError (`not_found`) that names every place it looked.
 */
export async function findWorkflow(name: string, places: WorkflowPlaces): Promise<string> {
  if (!NAME.test(name)) {
    throw new SvcError(
      "invalid_argument",
      `Cannot find workflow ${shown(name)}: a name is letters, digits, '_' and '-'`,
    );
  }
  const candidates = nameCandidates(name, places);
  const found = await byName(name, candidates);
  if (found) return found.real;
  throw new SvcError(
    "not_found",
    `Cannot find workflow '${name}': looked for meta.name '${name}' and ${name}.js in ${
      placesOf(candidates)
    }`,
  );
}

/**
 * The folder a `./` or `../` ref starts from, and the folder it must stay in. Refs of a script
 * that came from a file start from that file's folder (`scriptDir`, a real path); they stay
 * inside the project when that folder is in the project, else inside the script's own folder (a
 * workflow of `~/.claude/workflows/` may reach its neighbours, nothing else). Other scripts
 * start and stay in the project.
 */
async function refRoots(
  places: WorkflowPlaces,
  scriptDir: string | undefined,
): Promise<{ root: string; base: string[]; where: string }> {
  const project = await realProject(places);
  if (scriptDir === undefined) return { root: project, base: [], where: "the project directory" };
  if (inside(scriptDir, project)) {
    const base = scriptDir.slice(project.length).split("/").filter(Boolean);
    return { root: project, base, where: "the project directory" };
  }
  return { root: scriptDir, base: [], where: "the calling script's folder" };
}

async function realProject(places: WorkflowPlaces): Promise<string> {
  return await platform().realPath(places.projectDir).catch(() => places.projectDir);
}

/**
 * The segments, from the project's root, of a `scriptPath`: Claude Code's rule, a path relative
 * to the project's root (not to the calling script), or an absolute path inside the project
 * (as named, or at its real path). Undefined when it leaves the project.
 */
function scriptPathSegments(ref: string, places: WorkflowPlaces, project: string) {
  if (!ref.startsWith("/")) return normalise(ref.split("/"));
  const absolute = normalise(ref.split("/"));
  if (absolute === undefined) return undefined;
  const path = `/${absolute.join("/")}`;
  for (const dir of [project, places.projectDir]) {
    if (inside(path, dir)) return path.slice(dir.length).split("/").filter(Boolean);
  }
  return undefined;
}

/** Where a ref leads: the file to read, the folder it must stay in, how errors name it. */
function refCandidates(
  ref: string,
  segments: string[] | undefined,
  root: { root: string; where: string },
): { display: string; candidates: Candidate[] } {
  if (!segments || segments.length === 0 || !ref.endsWith(".js")) {
    // An absolute path is the host's: it is not repeated to the script.
    const what = ref.startsWith("/") ? "an absolute path" : shown(ref);
    throw new SvcError(
      "invalid_argument",
      `workflow(): ${what} must be a path to a .js file inside ${root.where}`,
    );
  }
  const display = segments.join("/");
  return {
    display,
    candidates: [{ path: joinPath(root.root, display), within: [root.root], where: root.where }],
  };
}

/** What `workflow(nameOrRef)` looks for, and how its messages name it. */
async function lookupOf(
  nameOrRef: WorkflowRef,
  options: WorkflowPlaces & { scriptDir?: string },
): Promise<{ ref: string; display: string; candidates: Candidate[]; isName: boolean }> {
  if (typeof nameOrRef !== "string") {
    const ref = nameOrRef.scriptPath;
    const project = await realProject(options);
    const root = { root: project, where: "the project directory" };
    return {
      ref,
      isName: false,
      ...refCandidates(ref, scriptPathSegments(ref, options, project), root),
    };
  }
  const ref = nameOrRef;
  if (NAME.test(ref)) {
    return { ref, isName: true, display: `${ref}.js`, candidates: nameCandidates(ref, options) };
  }
  if (ref.startsWith("./") || ref.startsWith("../")) {
    const { root, base, where } = await refRoots(options, options.scriptDir);
    const segments = normalise([...base, ...ref.split("/")]);
    return { ref, isName: false, ...refCandidates(ref, segments, { root, where }) };
  }
  throw new SvcError(
    "invalid_argument",
    `workflow(): ${
      ref.startsWith("/") ? "an absolute path" : shown(ref)
    } is neither a workflow name (letters, digits, _ and -) nor a relative path like ./sub.js`,
  );
}

/** A workflow's file, found: its real path and the file name its messages show. */
export interface LocatedWorkflow {
  /** The file's real path (read there only). */
  real: string;
  /** The name its messages and stack traces show: its base name, or its path in the project. */
  filename: string;
}

/**
 * Finds the file of `workflow(nameOrRef)`. A name (`review`) is looked up as
 * {@linkcode findWorkflow} says; `{scriptPath}` is a path from the project's root, or an
 * absolute path inside the project (as in Claude Code); a `./` or `../` ref starts from the
 * calling script's folder (`scriptDir`), else the project. The file's real path must stay inside
 * the folder it must (the project, see `refRoots`; for a name, the workflows folder it was found
 * in). Every failure is an SvcError with a message for the script, naming folders by role and
 * never by host path.
 */
export async function locateWorkflow(
  nameOrRef: WorkflowRef,
  options: WorkflowPlaces & { scriptDir?: string },
): Promise<LocatedWorkflow> {
  const { ref, display, candidates, isName } = await lookupOf(nameOrRef, options);
  const found = isName ? await byName(ref, candidates) : await firstExisting(candidates, ref);
  if (found) {
    const filename = isName ? found.real.slice(found.real.lastIndexOf("/") + 1) : display;
    return { real: found.real, filename };
  }
  const asked = ref.startsWith("/") ? display : ref;
  const sought = isName ? `meta.name '${ref}' and ${display}` : display;
  throw new SvcError(
    "not_found",
    `workflow(): no workflow ${shown(asked)} (looked for ${sought} in ${placesOf(candidates)})`,
  );
}

/**
 * Finds ({@linkcode locateWorkflow}) and checks the script of `workflow(nameOrRef)`: its body
 * for the guest, and what its meta's check warned about.
 */
export async function resolveWorkflow(
  nameOrRef: WorkflowRef,
  options: WorkflowPlaces & { scriptDir?: string },
): Promise<ResolvedWorkflow> {
  const { real, filename } = await locateWorkflow(nameOrRef, options);
  let source: string;
  try {
    source = await readCheckedFile(real, {
      maxBytes: MAX_WORKFLOW_FILE_BYTES,
      shown: shown(filename),
    });
  } catch (error) {
    const why = error instanceof SvcError ? error.message : `${shown(filename)} could not be read`;
    throw new SvcError("not_found", `workflow(): ${why}`);
  }
  const checked = checkScript(source, { filename });
  return { body: checked.body, filename, warnings: checked.warnings };
}
