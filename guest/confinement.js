// What a permissionless Deno process still offers beyond its own realm, taken away before the
// user's code exists: the runtime's internals (`Deno[Deno.internal]` holds the raw ops), Node's
// module loaders on `process` (`node:v8` hands out heap snapshots that hold the bridge nonce,
// `node:inspector` a debugger, `node:vm` fresh realms), and storage (the Cache API and Web
// Storage write into DENO_DIR). `import("node:...")` is refused by the guest's import map.
import { ErrorCtor, ObjectDefineProperty } from "./primordials.js";

const NO_IMPORTS = "scripts import nothing, they reach the outside only through agent()";
const NO_STORAGE = "scripts have no storage: keep state in variables, or return it";

const STORAGE = ["caches", "CacheStorage", "Cache", "localStorage", "sessionStorage", "Storage"];

function refusal(what, reason) {
  return () => {
    throw new ErrorCtor(`${what} is not available in workflow scripts: ${reason}`);
  };
}

/** Replaces `key` with a getter that throws, for good: the script cannot redefine it. */
function deny(target, key, what, reason) {
  try {
    ObjectDefineProperty(target, key, {
      get: refusal(what, reason),
      enumerable: false,
      configurable: false,
    });
  } catch {
    // A non-configurable property stays as the runtime made it; the tests notice.
  }
}

/** Replaces method `key` with one that throws, for good. */
function denyCall(target, key, what, reason) {
  try {
    ObjectDefineProperty(target, key, {
      value: refusal(what, reason),
      writable: false,
      enumerable: false,
      configurable: false,
    });
  } catch {
    // As in deny().
  }
}

/** Confines the guest's global object. Runs once, before the user's code. */
export function confineGlobal(global) {
  const deno = global.Deno;
  deny(deno, deno.internal, "Deno[Deno.internal]", NO_IMPORTS);
  for (const name of STORAGE) deny(global, name, name, NO_STORAGE);
}

/** Confines Node's `process` object, on its first use (see process_hook.js). */
export function confineProcess(process) {
  denyCall(process, "getBuiltinModule", "process.getBuiltinModule()", NO_IMPORTS);
  denyCall(process, "binding", "process.binding()", NO_IMPORTS);
  denyCall(process, "_linkedBinding", "process._linkedBinding()", NO_IMPORTS);
  denyCall(process, "dlopen", "process.dlopen()", NO_IMPORTS);
}
