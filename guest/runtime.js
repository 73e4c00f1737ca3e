// Deno's own internals a guest needs, captured at evaluation like the primordials, before any
// user code exists. Kept apart from primordials.js, which is plain JavaScript: the host shares
// pieces built on that (the SHA-256 a call is hashed with), under Node as well as Deno.
import { uncurryThis } from "./primordials.js";

// The runtime's async context (what Node's AsyncLocalStorage is built on), taken from its
// internals before confinement denies them: it follows every await and promise callback, so
// each agent() call can tell which branch of parallel()/pipeline() made it. The script never
// holds the variable, and Deno's methods on it use internal primordials.
const core = Deno[Deno.internal].core;
export const AsyncVariableCtor = core.AsyncVariable;
export const AsyncVariablePrototypeEnter = uncurryThis(core.AsyncVariable.prototype.enter);
export const AsyncVariablePrototypeGet = uncurryThis(core.AsyncVariable.prototype.get);
export const setAsyncContext = core.setAsyncContext;

// Deno's own methods use internal primordials; binding them here keeps them out of the user's reach.
export const stdinRead = Deno.stdin.read.bind(Deno.stdin);
export const stdoutWriteSync = Deno.stdout.writeSync.bind(Deno.stdout);
export const stderrWriteSync = Deno.stderr.writeSync.bind(Deno.stderr);
export const exitProcess = Deno.exit.bind(Deno);
export const addEventListener = globalThis.addEventListener.bind(globalThis);
// Whether a value is a Proxy: a script's options must be plain data (plain_options.js), which no
// JavaScript of the script's own realm can tell apart from a Proxy.
export const isProxy = core.isProxy;
