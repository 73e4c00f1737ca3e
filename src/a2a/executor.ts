/**
 * The A2A executor: turns a peer's message into svc work (a dispatch task, or a named workflow
 * run), publishes the A2A task's life as the svc work lives it, records the exchange as an
 * inbound collaboration, and carries cancels to the svc task or run.
 * @module
 */
import { type Artifact, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import {
  AgentEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import type { WorkflowPlaces } from "../engine/mod.ts";
import { readCheckedFile } from "../workspace/mod.ts";
import { SvcError, toSvcError } from "../errors/mod.ts";
import type { Caller, CollaborationRecord, RunState } from "../services/mod.ts";
import { platform } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import type { Services } from "../services/mod.ts";
import { callerOfContext } from "./caller_user.ts";
import { type PeerRequest, readPeerRequest, sessionNameOf } from "./message_input.ts";
import { peerWorkflowFile } from "./peer_workflow.ts";
import { A2A_STATE_OF, collaborationState, isFinalState } from "./state_map.ts";

/** Metadata key of the svc task that serves an A2A task. */
export const TASK_ID_KEY = "svc.task_id";
/** Metadata key of the svc run that serves an A2A task. */
export const RUN_ID_KEY = "svc.run_id";
/** Metadata key of the collaboration that records the exchange. */
export const COLLABORATION_KEY = "svc.collaboration_id";
/**
 * Metadata key of what the work used: `{input_tokens, output_tokens, cost_usd}` (cost null when
 * unmetered). A peer svc's `a2a` provider reads it to account for the call.
 */
export const USAGE_KEY = "svc.usage";

/** Longest answer text put in an artifact; longer answers are clipped. */
export const ANSWER_LIMIT = 48 * 1024;
/** Largest workflow file a peer may start. */
const SCRIPT_LIMIT = 1024 * 1024;
/** Longest collaboration summary written (the log's own limit is larger). */
const SUMMARY_LIMIT = 1000;

/** Options of {@linkcode SvcExecutor}. */
export interface SvcExecutorOptions {
  /** Where named workflows are looked up (the project, `SVC_HOME`, the user's home). */
  places: WorkflowPlaces;
}

/** The svc work of one live A2A task of this process, and how to stop it. */
interface LiveWork {
  cancelled: boolean;
  cancel?: () => Promise<void>;
}

/** How long an execution waits for its final state to be saved before it returns anyway, in ms. */
const SAVE_WAIT_MS = 10_000;

/** Where the work ended. */
interface Outcome {
  state: RunState;
  result?: JsonValue;
  error?: { code: string; message: string };
  usage: { input_tokens: number; output_tokens: number; cost_usd: number | null };
}

function clip(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

function textPart(text: string): Part {
  return {
    content: { $case: "text", value: text },
    metadata: undefined,
    filename: "",
    mediaType: "text/plain",
  };
}

function answerPart(result: JsonValue | undefined): Part {
  if (typeof result === "string" || result === undefined || result === null) {
    return textPart(clip(typeof result === "string" ? result : "", ANSWER_LIMIT));
  }
  return {
    content: { $case: "data", value: result },
    metadata: undefined,
    filename: "",
    mediaType: "application/json",
  };
}

function agentMessage(ids: { taskId: string; contextId: string }, text: string): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: ids.contextId,
    taskId: ids.taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function now(): string {
  return new Date().toISOString();
}

/** The svc side of the A2A request handler. */
export class SvcExecutor implements AgentExecutor {
  readonly #services: Services;
  readonly #places: WorkflowPlaces;
  readonly #live = new Map<string, LiveWork>();
  readonly #running = new Set<Promise<void>>();
  /** Executions waiting for their final state to reach the store, by A2A task id. */
  readonly #saving = new Map<string, () => void>();
  #closed = false;

  /** An executor over `services`. */
  constructor(services: Services, options: SvcExecutorOptions) {
    this.#services = services;
    this.#places = options.places;
  }

  /** Whether this process is doing the svc work of A2A task `taskId`. */
  isLive(taskId: string): boolean {
    return this.#live.has(taskId);
  }

  /** Serves one message: from a `task` event to the final status, whatever happens between. */
  execute = (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const running = this.#execute(context, bus);
    this.#running.add(running);
    running.finally(() => this.#running.delete(running)).catch(() => {});
    return running;
  };

  /**
   * Hears that a task was saved: an execution whose final state is now in the store may end.
   * Ending only then lets a closing server wait for everything its tasks still had to write.
   */
  noteSaved(task: Task): void {
    if (isFinalState(task.status?.state)) this.#saving.get(task.id)?.();
  }

  /** Cancels the svc work of every live task and waits for their executions to end. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const work of this.#live.values()) {
      work.cancelled = true;
      await work.cancel?.().catch(() => {});
    }
    await Promise.allSettled([...this.#running]);
  }

  async #execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const caller = callerOfContext(context.context);
    const ids = { taskId: context.taskId, contextId: context.contextId };
    if (context.task) {
      // A message to a task still running: svc tasks take no input midway.
      bus.publish(AgentEvent.message(agentMessage(
        ids,
        "svc takes no further message on a task that is still running: send a new message (the same contextId continues the conversation)",
      )));
      return;
    }
    const work: LiveWork = { cancelled: this.#closed };
    this.#live.set(ids.taskId, work);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const saved = new Promise<void>((resolve) => {
      this.#saving.set(ids.taskId, resolve);
      timer = setTimeout(resolve, SAVE_WAIT_MS);
    });
    try {
      await this.#serve(context, bus, caller, work);
      await saved;
    } finally {
      clearTimeout(timer);
      this.#saving.delete(ids.taskId);
      this.#live.delete(ids.taskId);
    }
  }

  /** Stops the svc work of a task of this process; its `execute` then publishes `canceled`. */
  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const work = this.#live.get(taskId);
    if (!work) {
      // Nothing of this process serves it any more: the bus only needs its final state.
      bus.publish(AgentEvent.statusUpdate({
        taskId,
        contextId: "",
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
        metadata: undefined,
      }));
      return;
    }
    work.cancelled = true;
    await work.cancel?.();
  };

  async #serve(
    context: RequestContext,
    bus: ExecutionEventBus,
    caller: Caller,
    work: LiveWork,
  ): Promise<void> {
    const ids = { taskId: context.taskId, contextId: context.contextId };
    const task: Task = {
      id: ids.taskId,
      contextId: ids.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [],
      history: [context.userMessage],
      metadata: {},
    };
    bus.publish(AgentEvent.task(task));
    const finish = (
      state: TaskState,
      text: string | undefined,
      metadata?: Record<string, unknown>,
    ) =>
      bus.publish(AgentEvent.statusUpdate({
        taskId: ids.taskId,
        contextId: ids.contextId,
        status: {
          state,
          message: text !== undefined ? agentMessage(ids, text) : undefined,
          timestamp: now(),
        },
        metadata,
      }));

    let request: PeerRequest;
    try {
      request = readPeerRequest(context.userMessage);
    } catch (error) {
      const message = toSvcError(error).message;
      await this.#record(caller, { state: TaskState.TASK_STATE_REJECTED, summary: message, ids });
      finish(TaskState.TASK_STATE_REJECTED, message);
      return;
    }
    const skill = request.kind === "dispatch" ? "dispatch" : `workflow:${request.name}`;
    const collaboration = await this.#record(caller, {
      state: TaskState.TASK_STATE_SUBMITTED,
      summary: clip(request.prompt || skill, SUMMARY_LIMIT),
      skill,
      ids,
    });
    let svcId: { task_id: string } | { run_id: string };
    try {
      svcId = await this.#start(request, caller, ids.contextId);
    } catch (error) {
      const message = toSvcError(error).message;
      await this.#update(collaboration, caller, {
        state: "rejected",
        summary: clip(message, SUMMARY_LIMIT),
      });
      finish(TaskState.TASK_STATE_REJECTED, message);
      return;
    }
    const svc = this.#services;
    work.cancel = "task_id" in svcId
      ? async () => void await svc.tasks.cancel((svcId as { task_id: string }).task_id, caller)
      : async () => void await svc.runs.cancel((svcId as { run_id: string }).run_id, caller);
    if (work.cancelled) await work.cancel().catch(() => {});
    const links = {
      ...("task_id" in svcId ? { [TASK_ID_KEY]: svcId.task_id } : { [RUN_ID_KEY]: svcId.run_id }),
      ...(collaboration ? { [COLLABORATION_KEY]: collaboration.collaboration_id } : {}),
    };
    finish(TaskState.TASK_STATE_WORKING, undefined, links);
    await this.#update(collaboration, caller, { state: "working", ...svcId });

    const outcome = await this.#wait(svcId, caller);
    const state = A2A_STATE_OF[outcome.state];
    const usage = { [USAGE_KEY]: outcome.usage };
    if (outcome.state === "succeeded") {
      const artifact: Artifact = {
        artifactId: crypto.randomUUID(),
        name: "answer",
        description: "",
        parts: [answerPart(outcome.result)],
        metadata: undefined,
        extensions: [],
      };
      bus.publish(AgentEvent.artifactUpdate({
        taskId: ids.taskId,
        contextId: ids.contextId,
        artifact,
        append: false,
        lastChunk: true,
        metadata: undefined,
      }));
    }
    const errorText = outcome.error
      ? `${outcome.error.code}: ${clip(outcome.error.message, 2000)}`
      : undefined;
    await this.#update(collaboration, caller, {
      state: collaborationState(state),
      summary: clip(
        outcome.state === "succeeded"
          ? `${skill}: ${JSON.stringify(outcome.result ?? null)}`
          : `${skill}: ${errorText ?? outcome.state}`,
        SUMMARY_LIMIT,
      ),
    });
    finish(state, errorText, { ...links, ...usage });
  }

  /** Starts the svc work a request asks for; an SvcError when it cannot start. */
  async #start(
    request: PeerRequest,
    caller: Caller,
    contextId: string,
  ): Promise<{ task_id: string } | { run_id: string }> {
    if (request.kind === "dispatch") {
      const status = await this.#services.tasks.start({
        prompt: request.prompt,
        fake_dispatch: request.fakeDispatch,
        session: await sessionNameOf(contextId),
        label: "a2a",
      }, caller);
      return { task_id: status.task_id };
    }
    const p = platform();
    const path = await peerWorkflowFile(
      request.scriptPath !== undefined
        ? { scriptPath: request.scriptPath }
        : { name: request.name },
      this.#places,
    );
    if ((await p.stat(path)).size > SCRIPT_LIMIT) {
      throw new SvcError(
        "invalid_request",
        `Cannot run workflow '${request.name}': its file is over ${SCRIPT_LIMIT} bytes`,
      );
    }
    const slash = path.lastIndexOf("/");
    // The very file found and checked, from one open handle (a swap since is refused).
    const script = await readCheckedFile(path, {
      maxBytes: SCRIPT_LIMIT,
      shown: `'${path.slice(slash + 1)}'`,
    }).catch((error: SvcError) => {
      throw new SvcError(error.code, `Cannot run workflow '${request.name}': ${error.message}`);
    });
    const status = await this.#services.runs.start(
      {
        script,
        filename: path.slice(slash + 1),
        script_dir: path.slice(0, slash) || "/",
        ...(request.args !== undefined ? { args: request.args } : {}),
        ...(request.title !== undefined ? { title: request.title } : {}),
        ...(request.description !== undefined ? { description: request.description } : {}),
        fake_dispatch: request.fakeDispatch,
      },
      caller,
      { via: "a2a" },
    );
    return { run_id: status.run_id };
  }

  /** Waits for the svc work's end, however it ends. */
  async #wait(
    svcId: { task_id: string } | { run_id: string },
    caller: Caller,
  ): Promise<Outcome> {
    try {
      if ("task_id" in svcId) {
        const status = await this.#services.tasks.wait(svcId.task_id, caller);
        return {
          state: status.state,
          ...(status.result !== undefined ? { result: status.result } : {}),
          ...(status.error ? { error: status.error } : {}),
          usage: { ...status.usage, cost_usd: status.cost_usd },
        };
      }
      const status = await this.#services.runs.wait(svcId.run_id, caller);
      return {
        state: status.state,
        ...(status.result !== undefined ? { result: status.result } : {}),
        ...(status.error
          ? { error: { code: status.error.code, message: status.error.message } }
          : {}),
        usage: { ...status.journal.usage },
      };
    } catch (error) {
      const svcError = toSvcError(error);
      return {
        state: "failed",
        error: { code: svcError.code, message: svcError.message },
        usage: { input_tokens: 0, output_tokens: 0, cost_usd: null },
      };
    }
  }

  async #record(
    caller: Caller,
    fields: {
      state: TaskState;
      summary: string;
      skill?: string;
      ids: { taskId: string; contextId: string };
    },
  ): Promise<CollaborationRecord | undefined> {
    try {
      return await this.#services.collaborations.record({
        direction: "inbound",
        // deno-lint-ignore no-control-regex -- the log refuses control characters
        peer: clip(`a2a:${fields.ids.contextId}`.replace(/[\u0000-\u001f\u007f]/g, "?"), 300),
        state: collaborationState(fields.state),
        ...(fields.skill !== undefined ? { skill: fields.skill } : {}),
        summary: clip(fields.summary, SUMMARY_LIMIT),
      }, caller);
    } catch {
      // The record is a log: a peer's odd context id must not cost it the answer.
      return undefined;
    }
  }

  async #update(
    collaboration: CollaborationRecord | undefined,
    caller: Caller,
    changes: Parameters<Services["collaborations"]["update"]>[1],
  ): Promise<void> {
    if (!collaboration) return;
    await this.#services.collaborations.update(collaboration.collaboration_id, changes, caller)
      .catch(() => {});
  }
}
