// The script primitives. Each is a thin wrapper that validates shape locally where a script bug
// must throw synchronously, and otherwise leaves the decision to the host.
import {
  ArrayCtor,
  ArrayIsArray,
  ErrorCaptureStackTrace,
  ErrorCtor,
  JSONParse,
  JSONStringify,
  MapCtor,
  MapPrototypeGet,
  MapPrototypeSet,
  ObjectDefineProperty,
  ObjectFreeze,
  PromiseCtor,
  PromisePrototypeThen,
  PromiseReject,
  PromiseResolve,
  RangeErrorCtor,
  StringCtor,
  StringPrototypeEndsWith,
  StringPrototypeIndexOf,
  StringPrototypeLastIndexOf,
  StringPrototypeSlice,
  TypeErrorCtor,
  WeakMapCtor,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
} from "./primordials.js";
import { describeError } from "./describe_error.js";
import { notPlainDataMessage, notPlainOptions } from "./plain_options.js";
import { createPositions } from "./positions.js";
import { AGENT, ITEM_ERROR, LOG, PHASE, WORKFLOW } from "./protocol.js";

/** Longest text of a thrown item's report: the host clips again, this keeps the frame small. */
const REPORT_TEXT = 4096;
const REPORT_STACK = 16384;

function clipped(text, max) {
  return text.length > max ? StringPrototypeSlice(text, 0, max) : text;
}

function describe(value) {
  if (value === null) return "null";
  if (ArrayIsArray(value)) return "an array";
  return typeof value;
}

/**
 * Gives an error that arrives with the host's reply the stack of the script line that made
 * the call, so the run's error points into the script.
 */
function withCallSite(error, site) {
  try {
    const stack = site.stack;
    const newline = typeof stack === "string" ? StringPrototypeIndexOf(stack, "\n") : -1;
    if (newline !== -1) {
      const value = `${error.name}: ${error.message}${StringPrototypeSlice(stack, newline)}`;
      ObjectDefineProperty(error, "stack", { value, writable: true, configurable: true });
    }
  } catch {
    // Keep the error's own stack.
  }
  return error;
}

/**
 * A hand-rolled Promise.all over captured primitives: never rejects, keeps positions. A start
 * that throws or rejects gives null at its position, and `failed(i, error)` hears why.
 */
function settleAll(count, start, failed) {
  return new PromiseCtor((resolve) => {
    const results = new ArrayCtor(count);
    let left = count;
    if (left === 0) resolve(results);
    const fail = (i, error) => {
      results[i] = null;
      failed(i, error);
      if (--left === 0) resolve(results);
    };
    for (let i = 0; i < count; i++) {
      let promise;
      try {
        promise = start(i);
      } catch (error) {
        fail(i, error);
        continue;
      }
      PromisePrototypeThen(
        PromiseResolve(promise),
        (value) => {
          results[i] = value;
          if (--left === 0) resolve(results);
        },
        (error) => fail(i, error),
      );
    }
  });
}

/** Names of the parameters every script body (and sub-workflow body) receives, in order. */
export const PARAMETERS = [
  "agent",
  "parallel",
  "pipeline",
  "phase",
  "log",
  "args",
  "budget",
  "workflow",
];

/**
 * Builds the primitives. `compile(body, filename)` turns a body into an async function taking
 * {@link PARAMETERS}; `parameters(args)` returns their values for the script's body.
 */
export function createPrimitives(channel, init, compile) {
  const maxItems = init.maxItems;
  const positions = createPositions(init.replay, init.maxAgents);
  let spent = 0;
  const total = init.budget.total;
  // The label of the agent() call each rejection came from, for the report of a thrown item.
  const callLabels = new WeakMapCtor();

  function rememberLabel(error, params) {
    try {
      const label = JSONParse(params).options.label;
      if (typeof label === "string") WeakMapPrototypeSet(callLabels, error, label);
    } catch {
      // No label to remember.
    }
    return error;
  }

  /**
   * Tells the host that an item of parallel() or pipeline() threw: its result is null, and the
   * run records why. The report is built from plain strings, never from the script's objects.
   */
  function reportThrown(fn, index, stage, error) {
    const described = describeError(error);
    const label = error !== null && typeof error === "object"
      ? WeakMapPrototypeGet(callLabels, error)
      : undefined;
    try {
      channel.notify(
        ITEM_ERROR,
        JSONStringify({
          __proto__: null,
          fn,
          index,
          stage,
          label: label ?? null,
          name: clipped(described.name, REPORT_TEXT),
          message: clipped(described.message, REPORT_TEXT),
          stack: clipped(described.stack, REPORT_STACK),
        }),
      );
    } catch {
      // The item's null stands; only its report is lost.
    }
  }

  // The script's agent(); a sub-workflow's calls carry its group, the phase they show in.
  function agent(prompt, options) {
    return agentIn(null, agent, prompt, options);
  }

  // `caller` is the function the script called, where the call's stack trace starts.
  function agentIn(group, caller, prompt, options) {
    if (typeof prompt !== "string") {
      return PromiseReject(
        new TypeErrorCtor(`agent(): prompt must be a string, got ${describe(prompt)}`),
      );
    }
    // Options that are no object count as none, as in Claude Code: the host narrates why.
    const ignored = options !== undefined &&
        (options === null || typeof options !== "object" || ArrayIsArray(options))
      ? describe(options)
      : null;
    if (ignored === null && options !== undefined) {
      const where = notPlainOptions(options);
      if (where !== undefined) return PromiseReject(new TypeErrorCtor(notPlainDataMessage(where)));
    }
    let params;
    try {
      params = ignored === null
        ? JSONStringify({ prompt, options: options ?? {} })
        : JSONStringify({ prompt, options: {}, ignored });
    } catch (error) {
      return PromiseReject(
        new TypeErrorCtor(`agent(): options must be JSON values (${error.message})`),
      );
    }
    const decision = positions.decide(params);
    if (decision.replay && decision.has) {
      // The value is already durable in the journal the host offered it from.
      channel.noteReplayed(decision.position);
      return PromiseResolve(decision.value);
    }
    const site = {};
    ErrorCaptureStackTrace(site, caller);
    // The position, the replay verdict and the group travel after the call, built from our
    // own strings.
    const placed = decision.position === null
      ? params
      : StringPrototypeSlice(params, 0, -1) + ',"position":' + decision.position +
        (decision.replay ? ',"replay":true}' : "}");
    const sent = group === null
      ? placed
      : StringPrototypeSlice(placed, 0, -1) + ',"group":' + JSONStringify(group) + "}";
    return PromisePrototypeThen(
      channel.request(AGENT, sent),
      (reply) => {
        if (typeof reply.spent === "number") spent = reply.spent;
        return reply.value;
      },
      (error) => {
        throw rememberLabel(withCallSite(error, site), params);
      },
    );
  }

  function parallel(thunks) {
    if (!ArrayIsArray(thunks)) {
      throw new TypeErrorCtor(`parallel() expects an array of functions, got ${describe(thunks)}`);
    }
    const count = thunks.length;
    if (count > maxItems) {
      throw new RangeErrorCtor(`parallel() takes at most ${maxItems} thunks, got ${count}`);
    }
    for (let i = 0; i < count; i++) {
      if (typeof thunks[i] !== "function") {
        throw new TypeErrorCtor(
          `parallel(): item ${i} must be a function, got ${describe(thunks[i])}`,
        );
      }
    }
    const own = new ArrayCtor(count);
    for (let i = 0; i < count; i++) own[i] = thunks[i];
    const { branch, step } = positions.step();
    return settleAll(
      count,
      (i) => positions.within(positions.fork(branch, step, i), own[i], []),
      (i, error) => reportThrown("parallel", i, null, error),
    );
  }

  function pipeline(items, ...stages) {
    if (!ArrayIsArray(items)) {
      throw new TypeErrorCtor(`pipeline() expects an array of items, got ${describe(items)}`);
    }
    const count = items.length;
    if (count > maxItems) {
      throw new RangeErrorCtor(`pipeline() takes at most ${maxItems} items, got ${count}`);
    }
    for (let s = 0; s < stages.length; s++) {
      if (typeof stages[s] !== "function") {
        throw new TypeErrorCtor(
          `pipeline(): stage ${s} must be a function, got ${describe(stages[s])}`,
        );
      }
    }
    const ownItems = new ArrayCtor(count);
    for (let i = 0; i < count; i++) ownItems[i] = items[i];
    const ownStages = new ArrayCtor(stages.length);
    for (let s = 0; s < stages.length; s++) ownStages[s] = stages[s];
    // The stage each item is in, for the report of one that throws.
    const at = new ArrayCtor(count);
    const { branch, step } = positions.step();
    // Each item walks the stages on its own promise chain: no barrier between stages. An item
    // is a branch of the fan-out; each stage is a step of it, with a branch of its own.
    const walk = async (i, itemBranch) => {
      const item = ownItems[i];
      let previous = item;
      for (let s = 0; s < ownStages.length; s++) {
        at[i] = s;
        const stageBranch = positions.fork(itemBranch, itemBranch.next++, 0);
        previous = await positions.within(stageBranch, ownStages[s], [previous, item, i]);
      }
      return previous;
    };
    return settleAll(
      count,
      (i) => {
        const itemBranch = positions.fork(branch, step, i);
        return positions.within(itemBranch, walk, [i, itemBranch]);
      },
      (i, error) => reportThrown("pipeline", i, at[i] ?? 0, error),
    );
  }

  function text(value) {
    if (typeof value === "string") return value;
    try {
      const json = JSONStringify(value);
      if (typeof json === "string") return json;
    } catch {
      // Fall through to String().
    }
    return StringCtor(value);
  }

  function phase(title) {
    channel.notify(PHASE, JSONStringify({ title: text(title) }));
  }

  function log(message) {
    channel.notify(LOG, JSONStringify({ message: text(message) }));
  }

  const budget = ObjectFreeze({
    total,
    unit: init.budget.unit,
    spent: () => spent,
    remaining: () => (total === null ? Infinity : total > spent ? total - spent : 0),
  });

  function nestedWorkflow() {
    return PromiseReject(
      new ErrorCtor(
        "workflow() cannot be called inside a sub-workflow: workflows nest one level only",
      ),
    );
  }

  function workflow(nameOrRef, subArgs) {
    // A name or ref, or Claude Code's `{scriptPath}`.
    let target;
    if (typeof nameOrRef === "string" && nameOrRef !== "") target = { ref: nameOrRef };
    else if (
      nameOrRef !== null && typeof nameOrRef === "object" && !ArrayIsArray(nameOrRef)
    ) {
      const scriptPath = nameOrRef.scriptPath;
      if (typeof scriptPath !== "string" || scriptPath === "") {
        return PromiseReject(
          new TypeErrorCtor(
            `workflow(): scriptPath must be a non-empty string, got ${describe(scriptPath)}`,
          ),
        );
      }
      target = { scriptPath };
    } else {
      return PromiseReject(
        new TypeErrorCtor(
          `workflow(): the name or ref must be a non-empty string or {scriptPath}, got ${
            describe(nameOrRef)
          }`,
        ),
      );
    }
    let params;
    let given;
    try {
      const json = subArgs === undefined ? undefined : JSONStringify(subArgs);
      given = json === undefined ? undefined : JSONParse(json);
      target.hasArgs = given !== undefined;
      params = JSONStringify(target);
    } catch (error) {
      return PromiseReject(
        new TypeErrorCtor(`workflow(): args must be JSON values (${error.message})`),
      );
    }
    const site = {};
    ErrorCaptureStackTrace(site, workflow);
    const child = childOf(typeof nameOrRef === "string" ? nameOrRef : target.scriptPath);
    // The sub-workflow's calls form one branch, in place of this step of the caller's.
    const { branch, step } = positions.step();
    // Said as the call is made, as Claude Code says it: sub-workflows started together are
    // narrated in the order the script started them, however long each one's lookup takes.
    say(`\u25b8 running dynamic workflow ${child.name}`);
    return PromisePrototypeThen(
      channel.request(WORKFLOW, params),
      (reply) => {
        return PromisePrototypeThen(
          positions.within(
            positions.fork(branch, step, 0),
            compile(reply.body, reply.filename),
            childParameters(given, child),
          ),
          (value) => {
            say(`\u25b8 ${child.name} done`);
            return value;
          },
        );
      },
      (error) => {
        throw withCallSite(error, site);
      },
    );
  }

  function say(message) {
    channel.notify(LOG, JSONStringify({ message }));
  }

  // How many sub-workflows of each name the run started: the second is `X #2`, as in Claude
  // Code's progress.
  const started = new MapCtor();

  /** A sub-workflow's name in narration (a path's file name), numbered from its second run. */
  function childOf(ref) {
    let name = ref;
    const slash = StringPrototypeLastIndexOf(name, "/");
    if (slash !== -1) name = StringPrototypeSlice(name, slash + 1);
    if (StringPrototypeEndsWith(name, ".js")) name = StringPrototypeSlice(name, 0, -3);
    const count = (MapPrototypeGet(started, name) ?? 0) + 1;
    MapPrototypeSet(started, name, count);
    const shown = count === 1 ? name : `${name} #${count}`;
    return { __proto__: null, name, group: `\u25b8 ${shown}`, prefix: `[${shown}] ` };
  }

  /**
   * A sub-workflow's primitives, as Claude Code gives them: its calls show in its own group
   * (`▸ X`), its log lines carry `[X] `, and its phase() does not regroup the caller's calls.
   */
  function childParameters(args, child) {
    const childAgent = (prompt, options) => agentIn(child.group, childAgent, prompt, options);
    const childLog = (message) => say(child.prefix + text(message));
    const childPhase = (_title) => {};
    return [childAgent, parallel, pipeline, childPhase, childLog, args, budget, nestedWorkflow];
  }

  function parameters(args) {
    return [agent, parallel, pipeline, phase, log, args, budget, workflow];
  }

  return ObjectFreeze({ parameters });
}
