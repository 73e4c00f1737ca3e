// The plain-data check of agent()'s options, as Claude Code's Workflow tool makes it: the options
// that decide what an agent may be or do (agentType, isolation, disallowedTools,
// bashCommandClamp) must be own, enumerable data properties of an object that is no Proxy,
// strings or arrays of strings that are no Proxy either, read without running any of the
// script's code. Anything else refuses the call before it is sent: the host reads the options
// from the guest's serialisation, which a getter or a Proxy could make differ from what the
// script shows.
import {
  ArrayIsArray,
  ObjectGetOwnPropertyDescriptor,
  ObjectGetPrototypeOf,
} from "./primordials.js";
import { isProxy } from "./runtime.js";

const NARROWING = ["agentType", "bashCommandClamp", "disallowedTools", "isolation"];
/** Longest array read element by element; Claude Code's cap. */
const MAX_ELEMENTS = 4096;

/** Claude Code's refusal of options it cannot read as plain data. */
export function notPlainDataMessage(where) {
  return `agent() could not read ${where} as plain data, so the agent was not started. Write the options as an object literal: agentType and isolation as strings, disallowedTools and bashCommandClamp as arrays of strings, and no Proxy, getter, or inherited or non-enumerable property.`;
}

/** Whether an array's elements are all own, enumerable data properties. */
function plainElements(array) {
  const length = ObjectGetOwnPropertyDescriptor(array, "length")?.value;
  if (typeof length !== "number" || length > MAX_ELEMENTS) return false;
  for (let i = 0; i < length; i++) {
    const element = ObjectGetOwnPropertyDescriptor(array, i);
    if (element === undefined || !element.enumerable || !("value" in element)) return false;
  }
  return true;
}

/** Where `key` of `options` is not plain data (`opts.<key>`), or undefined. */
function keyProblem(options, key) {
  for (let owner = options; owner !== null; owner = ObjectGetPrototypeOf(owner)) {
    if (owner !== options && isProxy(owner)) return `opts.${key}`;
    const found = ObjectGetOwnPropertyDescriptor(owner, key);
    if (found === undefined) continue;
    if (owner !== options || !found.enumerable || !("value" in found)) return `opts.${key}`;
    const value = found.value;
    if (value === null || (typeof value !== "object" && typeof value !== "function")) {
      return undefined;
    }
    if (key === "agentType" || key === "isolation") return `opts.${key}`;
    if (isProxy(value) || !ArrayIsArray(value) || !plainElements(value)) return `opts.${key}`;
    return undefined;
  }
  return undefined;
}

/**
 * Where agent() options (an object) are not plain data, as Claude Code names it (`opts` or
 * `opts.<key>`); undefined when they are.
 */
export function notPlainOptions(options) {
  if (isProxy(options)) return "opts";
  for (const key of NARROWING) {
    const problem = keyProblem(options, key);
    if (problem !== undefined) return problem;
  }
  return undefined;
}
