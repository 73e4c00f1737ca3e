/**
 * The plain forms of `svc workflow run <script> [--option value | --option=value | --flag]...`
 * and `svc workflow work <run_id>`, read without commander: commander's CommonJS requires
 * `node:events`, `node:child_process` and more, which start Deno's Node layer (some 15 ms of
 * every run's start). Anything else (help, a short option, an unknown or repeated option, a
 * value outside its choices, `--`, a missing or extra argument) is left to commander
 * (`cli/workflow_commands.ts`), which reads it and reports what is wrong; what this reads, it
 * reads as commander does (`test/quick_workflow_args_test.ts` holds the two together).
 * @module
 */
import type { WorkflowRunFlags } from "./workflow_run.ts";

/** A value option of `svc workflow run`: its key in the flags, its default, its choices. */
interface ValueOption {
  key: keyof WorkflowRunFlags;
  default?: string;
  choices?: readonly string[];
}

const SANDBOX_LEVELS = ["read-only", "write", "full"] as const;

/** The value options of `svc workflow run`, as `cli/workflow_commands.ts` declares them. */
const VALUE_OPTIONS: Readonly<Record<string, ValueOption>> = {
  "args": { key: "args" },
  "timeout": { key: "timeout", default: "3600" },
  "isolation": {
    key: "isolation",
    default: "unsafe-local",
    choices: ["unsafe-local", "microvm"],
  },
  "sandbox-default": { key: "sandboxDefault", default: "read-only", choices: SANDBOX_LEVELS },
  "sandbox-max": { key: "sandboxMax", choices: SANDBOX_LEVELS },
  "workdir": { key: "workdir" },
  "budget-tokens": { key: "budgetTokens" },
  "budget-usd": { key: "budgetUsd" },
  "max-agents": { key: "maxAgents" },
  "concurrency": { key: "concurrency" },
  "resume-from": { key: "resumeFrom" },
  "title": { key: "title" },
  "description": { key: "description" },
  "output": { key: "output" },
};

/** The switches of `svc workflow run`. */
const FLAG_OPTIONS: Readonly<Record<string, keyof WorkflowRunFlags>> = {
  "fake-dispatch": "fakeDispatch",
  "json": "json",
};

/** A command line read here: which command, with what. */
export type QuickCommand =
  | { command: "run"; script: string; flags: WorkflowRunFlags }
  | { command: "work"; runId: string };

/** Reads one `--name[=value]` at `argv[at]` into `flags`; the index after it, or undefined. */
function readOption(
  argv: readonly string[],
  at: number,
  flags: Record<string, string | boolean>,
  seen: Set<string>,
): number | undefined {
  const word = argv[at]!;
  const equals = word.indexOf("=");
  const name = word.slice(2, equals < 0 ? undefined : equals);
  if (seen.has(name)) return undefined;
  seen.add(name);
  // Own keys only: `--constructor` is no option.
  const flag = Object.hasOwn(FLAG_OPTIONS, name) ? FLAG_OPTIONS[name] : undefined;
  if (flag !== undefined) {
    if (equals >= 0) return undefined;
    flags[flag] = true;
    return at + 1;
  }
  const option = Object.hasOwn(VALUE_OPTIONS, name) ? VALUE_OPTIONS[name] : undefined;
  if (option === undefined) return undefined;
  const value = equals >= 0 ? word.slice(equals + 1) : argv[at + 1];
  if (value === undefined || (equals < 0 && value.startsWith("-"))) return undefined;
  if (option.choices !== undefined && !option.choices.includes(value)) return undefined;
  flags[option.key] = value;
  return equals >= 0 ? at + 1 : at + 2;
}

/** `workflow run ...` in its plain form, or undefined. */
function quickRun(argv: readonly string[]): QuickCommand | undefined {
  const flags: Record<string, string | boolean> = {};
  for (const option of Object.values(VALUE_OPTIONS)) {
    if (option.default !== undefined) flags[option.key] = option.default;
  }
  const seen = new Set<string>();
  const scripts: string[] = [];
  let at = 2;
  while (at < argv.length) {
    const word = argv[at]!;
    if (word.startsWith("--") && word !== "--") {
      const next = readOption(argv, at, flags, seen);
      if (next === undefined) return undefined;
      at = next;
    } else if (word.startsWith("-") && word !== "-") {
      return undefined;
    } else {
      scripts.push(word);
      at++;
    }
  }
  if (scripts.length !== 1) return undefined;
  return { command: "run", script: scripts[0]!, flags: flags as WorkflowRunFlags };
}

/**
 * `argv` as a plain `workflow run` or `workflow work` command, or undefined when commander
 * must read it.
 */
export function quickWorkflowArgs(argv: readonly string[]): QuickCommand | undefined {
  if (argv[0] !== "workflow") return undefined;
  if (argv[1] === "run") return quickRun(argv);
  const runId = argv[2];
  if (argv[1] === "work" && argv.length === 3 && runId !== undefined && !runId.startsWith("-")) {
    return { command: "work", runId };
  }
  return undefined;
}
