// `globalThis.process` boots Deno's Node compatibility layer on first access (about 25 ms), so
// what must be changed on it is applied on first use instead of now.
import {
  ObjectDefineProperty,
  ObjectGetOwnPropertyDescriptor,
  ReflectApply,
} from "./primordials.js";

/**
 * Calls `apply(process)` once, before the process object first reaches anyone: the global
 * getter is wrapped, and made non-configurable so that the script cannot undo the wrap.
 */
export function whenProcess(global, apply) {
  const descriptor = ObjectGetOwnPropertyDescriptor(global, "process");
  if (!descriptor) return;
  if (!descriptor.get) {
    if (descriptor.value) apply(descriptor.value);
    return;
  }
  const getter = descriptor.get;
  let process;
  try {
    ObjectDefineProperty(global, "process", {
      get() {
        if (process === undefined) {
          process = ReflectApply(getter, global, []);
          apply(process);
        }
        return process;
      },
      set: descriptor.set,
      enumerable: descriptor.enumerable,
      configurable: false,
    });
  } catch {
    apply(global.process);
  }
}
