/**
 * Claude Code's subagent definitions (`agent(prompt, {agentType})`): a Markdown file
 * `.claude/agents/<name>.md` with YAML front matter (`name`, `description`, `tools`, `model`)
 * whose body is the agent's system prompt, and the built-in types `general-purpose`, `Explore`
 * and `Plan`. The type's name comes from the script and is checked before it becomes a path;
 * files are read at their real paths, bounded in size, and only inside the folder they were
 * looked up in.
 * @module
 */
import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import {
  type AgentOptions,
  clampWithoutBashProblem,
  disallowedToolsProblem,
} from "../schemas/mod.ts";
import { readCheckedFile } from "../workspace/mod.ts";

/** Limits of agent definitions. */
export const AGENT_TYPE_LIMITS = {
  /** Longest agent type name. */
  name: 128,
  /** Largest agent file read, in bytes (its body becomes one command-line argument). */
  fileBytes: 64 * 1024,
  /** Files of a folder read when no `<name>.md` exists and the name is searched in front matter. */
  scannedFiles: 200,
};

/** A resolved agent type, as a call applies it. */
export interface AgentDefinition {
  name: string;
  description?: string;
  /** The system prompt: the file's body; none for `general-purpose`. */
  system?: string;
  /** The model the type asks for; undefined for `inherit` or none. */
  model?: string;
  /** The tool list as written; undefined when the type has every tool. */
  tools?: string[];
  /** Tools the type denies (`disallowedTools`), enforced on every call of it as the option is. */
  disallowedTools?: string[];
  /** Whether the type has no tool that edits files or runs commands: its calls run read-only. */
  readOnly: boolean;
  /** Where it came from: a file path, or `built-in`. */
  source: string;
}

/** The tools that write files or run commands; an agent without any of them is read-only. */
export const WRITING_TOOLS = ["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"];

/** Claude Code's built-in types, which need no file. */
export const BUILT_IN_AGENT_TYPES: Readonly<Record<string, AgentDefinition>> = {
  "general-purpose": {
    name: "general-purpose",
    description: "Every tool; the call's own sandbox level",
    readOnly: false,
    source: "built-in",
  },
  Explore: {
    name: "Explore",
    description: "Searches and reads the code base; changes nothing",
    system:
      "You explore a code base to answer a question. Search for files and read them; do not create, edit or delete anything, and run no command that changes state. Report what you found, with file paths.",
    tools: ["Glob", "Grep", "Read", "WebFetch", "WebSearch"],
    readOnly: true,
    source: "built-in",
  },
  Plan: {
    name: "Plan",
    description: "Researches the code base and proposes a plan; changes nothing",
    system:
      "You research a code base and design an implementation plan. Read what you need; do not create, edit or delete anything. Answer with the plan: the steps, the files each touches, and the risks.",
    tools: ["Glob", "Grep", "Read", "WebFetch", "WebSearch"],
    readOnly: true,
    source: "built-in",
  },
};

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const toolList = z.union([z.string(), z.array(z.string())]);
const FrontMatterSchema = z.looseObject({
  name: z.string().optional(),
  description: z.string().optional(),
  tools: toolList.nullish(),
  disallowedTools: toolList.nullish(),
  model: z.string().nullish(),
});

/** A name for a message: JSON-quoted (control characters show escaped) and clipped. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

/** Refuses an agent type name that could be anything but one file name. */
export function checkAgentTypeName(name: string): void {
  if (name.length > AGENT_TYPE_LIMITS.name || !NAME.test(name)) {
    throw new SvcError(
      "invalid_argument",
      `agent(): option 'agentType' ${
        quoted(name)
      } is not an agent type name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most ${AGENT_TYPE_LIMITS.name} characters`,
    );
  }
}

/** `Read, Grep` or `[Read, Grep]` as a list of tool names. */
function tools(value: string | string[] | null | undefined): string[] | undefined {
  if (value === null || value === undefined) return undefined;
  const list = typeof value === "string" ? value.split(",") : value;
  return list.map((tool) => tool.trim()).filter((tool) => tool !== "");
}

/** `Bash(git diff:*)` is Bash. */
function toolName(tool: string): string {
  const paren = tool.indexOf("(");
  return (paren === -1 ? tool : tool.slice(0, paren)).trim();
}

/**
 * Reads an agent file: front matter between `---` lines, then the body. Rejects with an
 * SvcError naming the file when it has no front matter or the front matter is not a YAML
 * mapping of the known field types. The YAML parser is loaded at the first agent file: a run
 * that names no agent type never loads it (it starts Deno's Node layer).
 */
export async function parseAgentFile(text: string, source: string): Promise<AgentDefinition> {
  const match = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  const fail = (reason: string): never => {
    throw new SvcError(
      "invalid_argument",
      `agent(): cannot read the agent type ${source}: ${reason}`,
    );
  };
  if (!match) return fail("it has no YAML front matter between '---' lines");
  const { parseFrontMatter } = await import("./yaml_front_matter.ts");
  let raw: unknown;
  try {
    raw = parseFrontMatter(match[1]!);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0]!.slice(0, 200) : "";
    return fail(`its front matter is not valid YAML (${reason})`);
  }
  const parsed = FrontMatterSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return fail(`front matter ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
  }
  const front = parsed.data;
  const given = tools(front.tools);
  const deniedList = tools(front.disallowedTools);
  const problem = deniedList === undefined ? undefined : disallowedToolsProblem(deniedList);
  if (problem !== undefined) return fail(`front matter disallowedTools: ${problem}`);
  const denied = new Set((deniedList ?? []).map(toolName));
  const usable = (given ?? WRITING_TOOLS).map(toolName).filter((tool) => !denied.has(tool));
  const model = front.model?.trim();
  const system = text.slice(match[0].length).trim();
  return {
    name: front.name ?? "",
    ...(front.description !== undefined ? { description: front.description } : {}),
    ...(system !== "" ? { system } : {}),
    ...(model && model !== "inherit" ? { model } : {}),
    ...(given !== undefined ? { tools: given } : {}),
    ...(deniedList?.length ? { disallowedTools: deniedList } : {}),
    readOnly: !usable.some((tool) => WRITING_TOOLS.includes(tool)),
    source,
  };
}

/** A folder agent files are looked up in. */
export interface AgentFolder {
  dir: string;
  /** How messages name the folder: never its path on the host, which a remote caller must not see. */
  shown: string;
  /** Folders (as named, resolved before the check) that must hold a file's real path. */
  within: string[];
}

function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/**
 * The agent types of one run (or task): `.claude/agents/` of the project, then of the user's
 * home, then the built-in types. Each name resolves once and is cached, so every call of a run
 * sees the same definition.
 */
export class AgentTypeRegistry {
  readonly #folders: AgentFolder[];
  readonly #cache = new Map<string, Promise<AgentDefinition>>();

  /** The folders in the order they are searched (see {@linkcode agentFolders}). */
  constructor(folders: AgentFolder[]) {
    this.#folders = folders;
  }

  /** The definition of `name`; throws an SvcError that names where svc looked. */
  resolve(name: string): Promise<AgentDefinition> {
    try {
      checkAgentTypeName(name);
    } catch (error) {
      return Promise.reject(error);
    }
    let found = this.#cache.get(name);
    if (!found) {
      found = this.#find(name);
      this.#cache.set(name, found);
    }
    return found;
  }

  async #find(name: string): Promise<AgentDefinition> {
    for (const folder of this.#folders) {
      const named = await this.#read(folder, `${name}.md`, name);
      if (named && (named.name === "" || named.name === name)) return { ...named, name };
      const found = await this.#scan(folder, name);
      if (found) return found;
    }
    const builtIn = BUILT_IN_AGENT_TYPES[name];
    if (builtIn) return builtIn;
    const looked = this.#folders.map((f) => `${f.shown}/${name}.md`);
    throw new SvcError(
      "not_found",
      `agent(): no agent type '${name}' (looked for ${
        [...looked, "the built-in types general-purpose, Explore, Plan"].join(", ")
      })`,
    );
  }

  /**
   * The definition in `folder/file` (its front matter's name as written, "" for none), or
   * undefined when there is no such file. Throws when the file's real path leaves the folder,
   * or the file is too large or unreadable as an agent definition.
   */
  async #read(
    folder: AgentFolder,
    file: string,
    name: string,
  ): Promise<AgentDefinition | undefined> {
    const p = platform();
    const path = joinPath(folder.dir, file);
    // Messages name the file by its folder's role: a remote caller's script learns no host path.
    const shown = `${file} in ${folder.shown}`;
    let real: string;
    try {
      real = await p.realPath(path);
    } catch {
      return undefined;
    }
    for (const dir of folder.within) {
      let bound: string | undefined;
      try {
        bound = await p.realPath(dir);
      } catch {
        bound = undefined;
      }
      if (bound === undefined || !inside(real, bound)) {
        throw new SvcError(
          "invalid_argument",
          `agent(): the agent type '${name}' leads outside ${folder.shown} through a symbolic link`,
        );
      }
    }
    const info = await p.stat(real);
    if (!info.isFile) return undefined;
    if (info.size > AGENT_TYPE_LIMITS.fileBytes) {
      throw new SvcError(
        "invalid_argument",
        `agent(): the agent type ${shown} is larger than ${AGENT_TYPE_LIMITS.fileBytes} bytes`,
      );
    }
    // The very file checked, from one open handle: a swap since the check is refused.
    const text = await readCheckedFile(real, {
      maxBytes: AGENT_TYPE_LIMITS.fileBytes,
      shown: `agent(): the agent type ${shown}`,
    });
    // The file may have grown since it was measured.
    if (text.length > AGENT_TYPE_LIMITS.fileBytes) {
      throw new SvcError(
        "invalid_argument",
        `agent(): the agent type ${shown} is larger than ${AGENT_TYPE_LIMITS.fileBytes} bytes`,
      );
    }
    return await parseAgentFile(text, shown);
  }

  /** Claude Code knows an agent by the `name` of its front matter: a file named otherwise. */
  async #scan(folder: AgentFolder, name: string): Promise<AgentDefinition | undefined> {
    let entries: string[];
    try {
      entries = await platform().readDir(folder.dir);
    } catch {
      return undefined;
    }
    const files = entries.filter((entry) => entry.endsWith(".md") && entry !== `${name}.md`)
      .sort().slice(0, AGENT_TYPE_LIMITS.scannedFiles);
    for (const file of files) {
      try {
        const definition = await this.#read(folder, file, name);
        if (definition?.name === name) return definition;
      } catch {
        // Another agent's broken (or escaping) file is not this call's concern.
      }
    }
    return undefined;
  }
}

/**
 * Where agent types are looked up: the project's `.claude/agents/` (files must stay inside the
 * project), then `.claude/agents/` of the user's home (files must stay inside that folder).
 */
export function agentFolders(options: { projectDir: string; userHome?: string }): AgentFolder[] {
  const project = joinPath(options.projectDir, ".claude", "agents");
  const folders: AgentFolder[] = [{
    dir: project,
    shown: "the project's .claude/agents",
    within: [project, options.projectDir],
  }];
  if (options.userHome !== undefined) {
    const home = joinPath(options.userHome, ".claude", "agents");
    folders.push({ dir: home, shown: "~/.claude/agents", within: [home] });
  }
  return folders;
}

/**
 * Why a call's clamp cannot hold with its agent type: a type without Bash (denied, or not in
 * its tool list) keeps none of the clamp's commands, and Claude Code refuses that blind agent.
 */
export function agentTypeNarrowingProblem(
  options: AgentOptions,
  agent: AgentDefinition,
): string | undefined {
  const bashless = agent.tools !== undefined && !agent.tools.map(toolName).includes("Bash");
  const denied = [...(agent.disallowedTools ?? []), ...(bashless ? ["Bash"] : [])];
  return clampWithoutBashProblem(denied, options.bashCommandClamp);
}

/**
 * A call's options with its agent type applied: the type's model when the call names neither a
 * model nor a profile, `read-only` when the type cannot write (the stricter level wins), and
 * the type's denied tools added to the call's.
 */
export function applyAgentType(options: AgentOptions, agent: AgentDefinition): AgentOptions {
  const denied = [
    ...new Set([...(options.disallowedTools ?? []), ...(agent.disallowedTools ?? [])]),
  ];
  return {
    ...options,
    ...(denied.length > 0 ? { disallowedTools: denied } : {}),
    ...(agent.model !== undefined && options.model === undefined && options.profile === undefined
      ? { model: agent.model }
      : {}),
    ...(agent.readOnly ? { sandbox: "read-only" as const } : {}),
  };
}
