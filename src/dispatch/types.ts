import { type ErrorCode, SvcError } from "../errors/mod.ts";
import type { AgentOptions, JsonValue, SandboxLevel } from "../schemas/mod.ts";
import type { ModelAliases } from "./model_aliases.ts";
import type { ProgressListener } from "./progress.ts";

/** Token usage of one call. */
export interface Usage {
  /** Tokens sent to the model (prompt, history, system prompt). */
  input_tokens: number;
  /** Tokens the model produced. */
  output_tokens: number;
}

import type { ChatMessage } from "../ledger/mod.ts";

export type { ChatMessage };

/**
 * A provider's failure after its call had consumed tokens. Providers that know what a failed
 * call used throw this, so that the failure is paid for: its tokens count against a token
 * budget and its cost (reported, else priced from the table) against a currency budget.
 */
export class SpentFailure extends SvcError {
  readonly usage: Usage;
  /** Cost in USD as the provider reported it; null when it did not. */
  readonly cost_usd: number | null;

  constructor(
    code: ErrorCode,
    message: string,
    spent: { usage: Usage; cost_usd?: number | null; cause?: unknown },
  ) {
    super(code, message, { cause: spent.cause });
    this.name = "SpentFailure";
    this.usage = spent.usage;
    this.cost_usd = spent.cost_usd ?? null;
  }
}

/** One dispatch as a provider receives it, after routing and kernel admission. */
export interface DispatchRequest {
  /** The prompt, as the script or client gave it. */
  prompt: string;
  /** The call's options, as `agent()` takes them. */
  options: AgentOptions;
  /**
   * The agent's system prompt (an `agentType`'s body): Claude Code takes it as its system
   * prompt, the model APIs as their system message, other harnesses before the prompt.
   */
  system?: string;
  /** Aborting stops the call: a harness's whole process group is killed. */
  signal: AbortSignal;
  /** The sandbox level the kernel admitted (after clamping); `read-only` when absent. */
  sandbox?: SandboxLevel;
  /** Working directory of the call (a fresh worktree with `isolation: "worktree"`). */
  cwd?: string;
  /**
   * The real path checked when the call's run or task started: a harness resolves `cwd` again
   * right before it starts the tool, refuses it outside this, and starts the tool in the real
   * path it checked.
   */
  cwdRoot?: string;
  /** The model to use; the provider's default when absent. */
  model?: string;
  /** A harness's own session id to continue (`claude --resume`, `codex exec resume`, ...). */
  resumeSession?: string;
  /** An API session's earlier messages, oldest first. */
  history?: ChatMessage[];
  /**
   * Receives the call's progress as it happens (text as it grows, tool uses, files changed,
   * errors). A provider passes what it parses through a `progressChannel()`, which
   * redacts and bounds it; providers that see nothing before the end send nothing.
   */
  onProgress?: ProgressListener;
  /**
   * Called at every sign of life of the call, parsed or not: a line a harness's tool wrote, a
   * chunk of an API's stream. The stall watch (`stallMs`) counts these as progress.
   */
  onActivity?: () => void;
  /**
   * Told how many of the agent's tool uses are running (started, their result not back yet),
   * by a provider that can tell: the stall watch holds while one runs, as Claude Code's does.
   */
  onToolsRunning?: (count: number) => void;
}

/** What a provider returns: text, or a JSON value for schema calls, with its usage. */
export interface DispatchResult {
  /** The answer: text, or the JSON value of a schema call. */
  output: JsonValue;
  /** Tokens the call used. */
  usage: Usage;
  /** Cost in USD; null when unknown (the dispatcher prices it from the table, else it is unmetered), never a guessed zero. */
  cost_usd: number | null;
  /** The provider that answered. */
  provider: string;
  /** The model that answered, when known. */
  model: string | null;
  /** The harness session id after this turn (some tools return a new one on resume). */
  session_id?: string | null;
}

/** Whether a provider can take calls now, and why not. */
export interface Availability {
  /** Whether calls can be sent to it now. */
  available: boolean;
  /** Why it is unavailable (binary missing, no API key, failing), or what was found. */
  reason: string;
  /** The tool's version, for harnesses that answered their version flag. */
  version?: string;
  /**
   * The probe has not ended yet (a slow version flag): the answer is provisional, is not
   * cached, and the next check asks again.
   */
  pending?: boolean;
}

/** Options of {@linkcode Provider.probe}. */
export interface ProbeRequest {
  /**
   * Whether to wait for a probe still running until it ends (a listing); `false` on a call's
   * path, which waits a short while and then goes ahead on what is known.
   */
  wait?: boolean;
}

/** A dispatch target: a harness, a model API, or the fake. */
export interface Provider {
  /** The name it registers under, as calls' `provider` option names it. */
  readonly name: string;
  /** `harness` drives a coding-agent command line; `api` calls a model API over HTTP. */
  readonly kind: "fake" | "harness" | "api";
  /** Performs one call; rejects with an SvcError (a {@linkcode SpentFailure} when tokens were used). */
  dispatch(request: DispatchRequest): Promise<DispatchResult>;
  /**
   * Claude Code's model aliases (`haiku`, `sonnet`, `opus`) this provider serves, with the model
   * name it passes for each. A provider without them never gets a call that names an alias.
   */
  readonly modelAliases?: ModelAliases;
  /** Checks that the provider can answer (binary answers its version flag, API key present). */
  probe?(options?: ProbeRequest): Promise<Availability>;
}
