/**
 * The named workflows this host offers other agents, one skill each on the agent card (named by
 * `meta.name`, else by file name): the `.js` files of the folders a workflow name is looked up in (the project's
 * `.claude/workflows/` and `workflows/`, `~/.claude/workflows/`, `$SVC_HOME/workflows/`), the
 * first of each name winning as it does for `svc workflow run <name>`. Bounded: a card lists at
 * most {@linkcode MAX_WORKFLOW_SKILLS} of them, with short texts.
 * @module
 */
import { checkScript, findWorkflow, type WorkflowPlaces } from "../engine/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";

/** Most workflow skills one card lists. */
export const MAX_WORKFLOW_SKILLS = 64;
/** Longest description a skill takes from its workflow's `meta`. */
export const SKILL_TEXT_LIMIT = 500;
/** Largest workflow file whose `meta` is read for its description. */
const META_FILE_LIMIT = 256 * 1024;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** One workflow as a skill. */
export interface WorkflowSkill {
  /** The workflow's name (what `svc.workflow` names). */
  name: string;
  /** What it does: its `meta.description`, clipped. */
  description: string;
}

function clip(text: string): string {
  // deno-lint-ignore no-control-regex -- a card shows no control characters
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return flat.length > SKILL_TEXT_LIMIT ? `${flat.slice(0, SKILL_TEXT_LIMIT)}…` : flat;
}

async function namesIn(dir: string): Promise<string[]> {
  const entries = await platform().readDir(dir).catch(() => [] as string[]);
  return entries.filter((e) => e.endsWith(".js")).map((e) => e.slice(0, -3))
    .filter((name) => NAME.test(name)).sort();
}

/**
 * The skill of the workflow saved as `<stem>.js`: named by its `meta.name` when that is a valid
 * name (what Claude Code and `workflow(name)` call it), else by its file name; described by its
 * `meta.description` (else `whenToUse`). The file is found as `findWorkflow` finds it, so a link
 * out of its folder is never read.
 */
async function skillOf(stem: string, places: WorkflowPlaces): Promise<WorkflowSkill> {
  const fallback = { name: stem, description: `Runs the svc workflow '${stem}'.` };
  try {
    const path = await findWorkflow(stem, places);
    const info = await platform().stat(path);
    if (info.size > META_FILE_LIMIT) return fallback;
    const meta = checkScript(await platform().readTextFile(path), { filename: `${stem}.js` }).meta;
    const name = typeof meta.name === "string" && NAME.test(meta.name) ? meta.name : stem;
    const text = meta.description ?? meta.whenToUse;
    return {
      name,
      description: typeof text === "string" && text.trim() !== ""
        ? clip(text)
        : `Runs the svc workflow '${name}'.`,
    };
  } catch {
    return fallback;
  }
}

/** The named workflows of `places`, each once, at most {@linkcode MAX_WORKFLOW_SKILLS}. */
export async function workflowSkills(places: WorkflowPlaces): Promise<WorkflowSkill[]> {
  const dirs = [
    joinPath(places.projectDir, ".claude", "workflows"),
    joinPath(places.projectDir, "workflows"),
    ...(places.userHome !== undefined ? [joinPath(places.userHome, ".claude", "workflows")] : []),
    joinPath(places.home, "workflows"),
  ];
  const names = new Set<string>();
  for (const dir of dirs) {
    for (const name of await namesIn(dir)) {
      if (names.size >= MAX_WORKFLOW_SKILLS) break;
      names.add(name);
    }
  }
  const out = new Map<string, WorkflowSkill>();
  for (const stem of names) {
    const skill = await skillOf(stem, places);
    if (!out.has(skill.name)) out.set(skill.name, skill);
  }
  return [...out.values()];
}
