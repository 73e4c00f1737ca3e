// The determinism lock: clock and randomness sources throw, so that a resumed run replays the
// same call sequence. It is for reproducibility, not security: the guest has no permissions anyway.
import {
  ErrorCtor,
  ObjectDefineProperty,
  ObjectFreeze,
  ObjectGetOwnPropertyDescriptor,
  ObjectGetOwnPropertyNames,
  ObjectGetPrototypeOf,
  ReflectConstruct,
} from "./primordials.js";

function refuse(call) {
  throw new ErrorCtor(
    `${call} is not available in workflow scripts: the host stamps every timestamp and a resumed ` +
      `run must make the same calls, so pass times and random values in through args`,
  );
}

function lockedFunction(call, name) {
  const locked = {
    [name]() {
      refuse(call);
    },
  }[name];
  return locked;
}

/** Defines `key` on `target` as a read-only, non-configurable value. Ignores what cannot be redefined. */
function pin(target, key, value) {
  try {
    ObjectDefineProperty(target, key, {
      value,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  } catch {
    // A non-configurable property stays as the runtime made it.
  }
}

function pinGetter(target, key, call) {
  try {
    ObjectDefineProperty(target, key, {
      get: lockedFunction(call, key),
      enumerable: false,
      configurable: false,
    });
  } catch {
    // As in pin().
  }
}

function lockDate(global) {
  const RealDate = global.Date;
  function Date(...args) {
    if (new.target === undefined) refuse("Date()");
    if (args.length === 0) refuse("new Date()");
    return ReflectConstruct(RealDate, args, new.target);
  }
  pin(Date, "prototype", RealDate.prototype);
  pin(Date, "length", 7);
  pin(Date, "UTC", RealDate.UTC);
  pin(Date, "parse", RealDate.parse);
  pin(Date, "now", lockedFunction("Date.now()", "now"));
  pin(RealDate.prototype, "constructor", Date);
  // The real constructor stays reachable through nothing: its own statics are locked too.
  pin(RealDate, "now", lockedFunction("Date.now()", "now"));
  pin(global, "Date", Date);
}

function lockMethods(object, proto, names, owner) {
  for (const name of names) {
    const fn = lockedFunction(`${owner}.${name}()`, name);
    if (proto && ObjectGetOwnPropertyDescriptor(proto, name)) pin(proto, name, fn);
    pin(object, name, fn);
  }
}

/** Locks the clocks of Node's `process` object, on its first use (see process_hook.js). */
export function lockProcessDeterminism(process) {
  const hrtime = lockedFunction("process.hrtime()", "hrtime");
  pin(hrtime, "bigint", lockedFunction("process.hrtime.bigint()", "bigint"));
  pin(process, "hrtime", hrtime);
  pin(process, "uptime", lockedFunction("process.uptime()", "uptime"));
}

/** Installs the lock on the guest's global object. Runs once, before the user's code. */
export function lockDeterminism(global) {
  lockDate(global);
  pin(global.Math, "random", lockedFunction("Math.random()", "random"));

  const performance = global.performance;
  const performanceProto = ObjectGetPrototypeOf(performance);
  lockMethods(performance, performanceProto, ["now", "mark", "measure"], "performance");
  pinGetter(performanceProto, "timeOrigin", "performance.timeOrigin");

  const crypto = global.crypto;
  lockMethods(crypto, ObjectGetPrototypeOf(crypto), ["getRandomValues", "randomUUID"], "crypto");

  const temporal = global.Temporal;
  if (temporal && typeof temporal.Now === "object") {
    const now = {};
    for (const name of ObjectGetOwnPropertyNames(temporal.Now)) {
      if (typeof temporal.Now[name] === "function") {
        now[name] = lockedFunction(`Temporal.Now.${name}()`, name);
      }
    }
    pin(temporal, "Now", ObjectFreeze(now));
  }

  // A fresh realm would bring an unlocked clock.
  function Worker() {
    throw new ErrorCtor(
      "new Worker() is not available in workflow scripts: use parallel() or pipeline()",
    );
  }
  pin(global, "Worker", Worker);
}
