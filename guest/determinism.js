// The determinism lock: clock and randomness sources, and measurements of the process, throw;
// the process's ids read as constants. A resumed run must replay the same call sequence, so
// nothing a script can read may differ between two runs of it. It is for reproducibility, not
// security: the guest has no permissions anyway.
import {
  ErrorCtor,
  ObjectCreate,
  ObjectDefineProperty,
  ObjectFreeze,
  ObjectGetOwnPropertyDescriptor,
  ObjectGetOwnPropertyNames,
  ObjectGetPrototypeOf,
  ReflectApply,
  ReflectConstruct,
  StringCtor,
  StringPrototypeToUpperCase,
  WeakMapCtor,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
} from "./primordials.js";

/** What `Deno.pid` and `process.pid` read in every guest: a process that is alone, as in a container. */
const GUEST_PID = 1;
/** What `Deno.ppid` and `process.ppid` read. */
const GUEST_PPID = 0;

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

/**
 * Locks the clocks and measurements of Node's `process` object, on its first use (see
 * process_hook.js). Its `pid` and `ppid` are getters the runtime made non-configurable; they
 * read `Deno.pid` and `Deno.ppid`, which {@linkcode lockDeterminism} pins.
 */
export function lockProcessDeterminism(process) {
  const hrtime = lockedFunction("process.hrtime()", "hrtime");
  pin(hrtime, "bigint", lockedFunction("process.hrtime.bigint()", "bigint"));
  pin(process, "hrtime", hrtime);
  const memoryUsage = lockedFunction("process.memoryUsage()", "memoryUsage");
  pin(memoryUsage, "rss", lockedFunction("process.memoryUsage.rss()", "rss"));
  pin(process, "memoryUsage", memoryUsage);
  lockMethods(process, null, ["uptime", "cpuUsage", "threadCpuUsage", "resourceUsage"], "process");
}

/** `Intl.DateTimeFormat` formats the current time when given no date. */
function lockIntl(global) {
  const proto = global.Intl.DateTimeFormat.prototype;
  const formatGetter = ObjectGetOwnPropertyDescriptor(proto, "format").get;
  const realFormatToParts = proto.formatToParts;
  // The spec's `format` is one bound function per formatter; so is the locked one.
  const formats = new WeakMapCtor();
  try {
    ObjectDefineProperty(proto, "format", {
      get() {
        const format = ReflectApply(formatGetter, this, []);
        let locked = WeakMapPrototypeGet(formats, this);
        if (locked === undefined) {
          locked = (date) => {
            if (date === undefined) refuse("Intl.DateTimeFormat.prototype.format() without a date");
            return format(date);
          };
          WeakMapPrototypeSet(formats, this, locked);
        }
        return locked;
      },
      enumerable: false,
      configurable: false,
    });
  } catch {
    // As in pin().
  }
  pin(proto, "formatToParts", function formatToParts(date) {
    if (date === undefined) refuse("Intl.DateTimeFormat.prototype.formatToParts() without a date");
    return ReflectApply(realFormatToParts, this, [date]);
  });
}

/** `new PerformanceMark(name)` reads the clock; with an explicit `startTime` it does not. */
function lockPerformanceMark(global) {
  const RealMark = global.PerformanceMark;
  if (typeof RealMark !== "function") return;
  function PerformanceMark(name, options) {
    const startTime = options === undefined || options === null ? undefined : options.startTime;
    if (new.target === undefined || startTime === undefined) {
      refuse("new PerformanceMark() without a startTime");
    }
    // The options are read once: a getter cannot answer the check and the runtime differently.
    const copy = { detail: options.detail, startTime };
    return ReflectConstruct(RealMark, [name, copy], new.target);
  }
  pin(PerformanceMark, "prototype", RealMark.prototype);
  pin(RealMark.prototype, "constructor", PerformanceMark);
  pin(global, "PerformanceMark", PerformanceMark);
}

/**
 * Web Crypto paths that draw fresh randomness the `--seed` does not reach: key generation, key
 * encapsulation, and the randomised schemes RSA-PSS (sign) and RSA-OAEP (encrypt, wrapKey).
 * Digests, HMAC, RSASSA-PKCS1-v1_5, ECDSA and Ed25519 signatures, AES with a given IV, and key
 * import and derivation stay deterministic and keep working.
 */
function lockSubtleCrypto(crypto) {
  const subtle = crypto.subtle;
  const proto = ObjectGetPrototypeOf(subtle);
  const always = ["generateKey", "encapsulateBits", "encapsulateKey"];
  lockMethods(subtle, proto, always, "crypto.subtle");
  const randomised = [["sign", 0, "RSA-PSS"], ["encrypt", 0, "RSA-OAEP"], [
    "wrapKey",
    3,
    "RSA-OAEP",
  ]];
  for (const [method, position, scheme] of randomised) {
    const original = proto[method];
    if (typeof original !== "function") continue;
    pin(
      proto,
      method,
      {
        [method](...args) {
          const algorithm = args[position];
          // The name is read once and handed on fixed, so a getter cannot answer twice.
          if (algorithm !== null && typeof algorithm === "object") {
            const name = StringCtor(algorithm.name);
            if (StringPrototypeToUpperCase(name) === scheme) {
              refuse(`crypto.subtle.${method}() with ${scheme}`);
            }
            const fixed = ObjectCreate(algorithm);
            ObjectDefineProperty(fixed, "name", { value: name, enumerable: true });
            args[position] = fixed;
          } else if (
            typeof algorithm === "string" && StringPrototypeToUpperCase(algorithm) === scheme
          ) {
            refuse(`crypto.subtle.${method}() with ${scheme}`);
          }
          return ReflectApply(original, this, args);
        },
      }[method],
    );
  }
}

/** Installs the lock on the guest's global object. Runs once, before the user's code. */
export function lockDeterminism(global) {
  lockDate(global);
  pin(global.Math, "random", lockedFunction("Math.random()", "random"));

  const performance = global.performance;
  const performanceProto = ObjectGetPrototypeOf(performance);
  lockMethods(performance, performanceProto, ["now", "mark", "measure"], "performance");
  pinGetter(performanceProto, "timeOrigin", "performance.timeOrigin");

  lockPerformanceMark(global);

  const crypto = global.crypto;
  lockMethods(crypto, ObjectGetPrototypeOf(crypto), ["getRandomValues", "randomUUID"], "crypto");
  lockSubtleCrypto(crypto);
  // A blob: URL names its blob with a fresh random UUID.
  pin(global.URL, "createObjectURL", lockedFunction("URL.createObjectURL()", "createObjectURL"));

  lockIntl(global);

  // The process: its ids read as constants, its measurements throw. Its working directory is
  // "/" for every guest (src/isolation/unsafe_local.ts).
  const deno = global.Deno;
  pin(deno, "pid", GUEST_PID);
  pin(deno, "ppid", GUEST_PPID);
  lockMethods(deno, null, ["memoryUsage", "cpuUsage"], "Deno");

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
