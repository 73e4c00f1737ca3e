// Logical positions of agent() calls, and replay from the prefix the host offered at start.
//
// A call's position is its place in the script's structure, which timing cannot change: the
// steps taken before it on its own branch, and the path of fan-outs (parallel() index,
// pipeline() item and stage, sub-workflow) that led to that branch. In a position, even depths
// count steps of one branch (taken in order) and odd depths name branches of one fan-out
// (side by side). A call replays when it matches the offered call at its position and no call
// logically before it (earlier on its branch and its ancestors, or inside a fan-out that
// joined before it) has differed; docs/SCRIPTS.md, "Resume".
import {
  ArrayIsArray,
  ArrayPrototypeSort,
  JSONParse,
  JSONStringify,
  MapCtor,
  MapPrototypeGet,
  MapPrototypeSet,
  ObjectKeys,
  ReflectApply,
} from "./primordials.js";
import {
  AsyncVariableCtor,
  AsyncVariablePrototypeEnter,
  AsyncVariablePrototypeGet,
  setAsyncContext,
} from "./runtime.js";
import { sha256Hex } from "./sha256.js";

/** Deepest position the host records (32 nested fan-outs); calls deeper run live. */
const MAX_DEPTH = 64;

function branchOf(parent, key, json, depth) {
  return { __proto__: null, parent, key, json, depth, next: 0, broken: parent?.broken ?? false };
}

/** JSON with object keys sorted at every level: the host's canonicalJson (src/engine/journal.ts). */
function canonical(value) {
  if (value === null || typeof value !== "object") return JSONStringify(value);
  if (ArrayIsArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i === 0 ? "" : ",") + canonical(value[i]);
    return out + "]";
  }
  const keys = ArrayPrototypeSort(ObjectKeys(value));
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    out += (i === 0 ? "" : ",") + JSONStringify(keys[i]) + ":" + canonical(value[keys[i]]);
  }
  return out + "}";
}

/**
 * Builds the position tracker. `offered` is the init frame's replay list, `[key, hash, value]`
 * triples (a value left out when the host keeps it: the call then asks the host); `maxAgents`
 * is the run's call limit, past which nothing replays here.
 */
export function createPositions(offered, maxAgents) {
  const variable = new AsyncVariableCtor();
  const root = branchOf(null, "", "", 0);
  const replay = new MapCtor();
  const list = offered ?? [];
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    MapPrototypeSet(replay, item[0], {
      __proto__: null,
      hash: item[1],
      has: item.length > 2,
      value: item[2],
    });
  }
  const replaying = list.length > 0;
  let issued = 0;

  function current() {
    return AsyncVariablePrototypeGet(variable) ?? root;
  }

  /** A fan-out's child branch `child` of the current branch's step `step`. */
  function fork(parent, step, child) {
    const depth = parent.depth + 2;
    if (parent.key === null || depth >= MAX_DEPTH) return branchOf(parent, null, null, depth);
    const sep = parent.key === "" ? "" : ".";
    return branchOf(
      parent,
      parent.key + sep + step + "." + child,
      parent.json + (parent.json === "" ? "" : ",") + step + "," + child,
      depth,
    );
  }

  /** Runs `fn(...args)` with `branch` as the current branch; its awaits keep it. */
  function within(branch, fn, args) {
    const previous = AsyncVariablePrototypeEnter(variable, branch);
    try {
      return ReflectApply(fn, undefined, args);
    } finally {
      setAsyncContext(previous);
    }
  }

  /** Takes the next step of the current branch: `{branch, step}`. */
  function step() {
    const branch = current();
    return { __proto__: null, branch, step: branch.next++ };
  }

  /** A difference on `branch`: it and every branch it joins into run live from here on. */
  function diverge(branch) {
    for (let b = branch; b !== null; b = b.parent) b.broken = true;
  }

  /**
   * Decides one agent() call made now: `{position, replay, value, has}`, where `position` is
   * the JSON of its position (null when too deep to record), `replay` says the offered call
   * matches, and `has` that its value is here to answer with.
   */
  function decide(paramsJson) {
    const { branch, step: index } = step();
    issued++;
    if (branch.key === null) return { __proto__: null, position: null, replay: false };
    const key = branch.key === "" ? "" + index : branch.key + "." + index;
    const position = "[" + branch.json + (branch.json === "" ? "" : ",") + index + "]";
    if (!replaying || branch.broken) return { __proto__: null, position, replay: false };
    const candidate = MapPrototypeGet(replay, key);
    // Past the run's call limit nothing replays here: the host refuses the call.
    if (candidate === undefined || issued > maxAgents) {
      diverge(branch);
      return { __proto__: null, position, replay: false };
    }
    const parsed = JSONParse(paramsJson);
    const hash = sha256Hex(
      canonical({ __proto__: null, options: parsed.options, prompt: parsed.prompt }),
    );
    if (hash !== candidate.hash) {
      diverge(branch);
      return { __proto__: null, position, replay: false };
    }
    // Each offered call answers once.
    MapPrototypeSet(replay, key, undefined);
    return { __proto__: null, position, replay: true, has: candidate.has, value: candidate.value };
  }

  return { __proto__: null, step, fork, within, decide, current };
}
