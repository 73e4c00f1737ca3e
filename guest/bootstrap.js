// The trusted main module of every guest process. The runtime pre-loads only this file and its
// static imports (all trusted); the user's script arrives inside the init frame and is compiled
// with the AsyncFunction constructor after the nonce has been consumed, so every import it
// attempts goes through the permission checks of a process that has no permissions.
import { openChannel, readInit } from "./channel.js";
import { describeError } from "./describe_error.js";
import { confineGlobal, confineProcess } from "./confinement.js";
import { lockDeterminism, lockProcessDeterminism } from "./determinism.js";
import { createPrimitives, PARAMETERS } from "./primitives.js";
import { whenProcess } from "./process_hook.js";
import {
  encodeUtf8,
  JSONParse,
  JSONStringify,
  ObjectGetPrototypeOf,
  ReflectApply,
  ReflectConstruct,
  writeAll,
} from "./primordials.js";
import { addEventListener, exitProcess, stderrWriteSync } from "./runtime.js";
import { DONE } from "./protocol.js";

function redirectConsole(console) {
  // Stdout belongs to the bridge; script output goes to stderr, where the host turns it into narration.
  const error = console.error;
  for (const name of ["log", "info", "debug", "dir", "dirxml", "table"]) {
    console[name] = (...args) => ReflectApply(error, console, args);
  }
}

async function main() {
  const { init, prefix, rest } = await readInit();
  const channel = openChannel(prefix, init.frameLimit, rest);
  let finished = false;

  function finish(report) {
    if (finished) return;
    finished = true;
    let params;
    try {
      params = JSONStringify(report);
    } catch (error) {
      params = JSONStringify({ ok: false, error: describeError(error) });
    }
    try {
      channel.notify(DONE, params);
    } catch (error) {
      channel.notify(DONE, JSONStringify({ ok: false, error: describeError(error) }));
    }
    exitProcess(0);
  }

  function finishWithValue(value) {
    let json;
    try {
      json = JSONStringify(value === undefined ? null : value);
    } catch (error) {
      const reason = describeError(error).message;
      finish({
        ok: false,
        error: {
          name: "TypeError",
          message: `the returned value is not JSON: ${reason}`,
          stack: "",
        },
      });
      return;
    }
    finish({ ok: true, value: JSONParse(json) });
  }

  const AsyncFunction = ObjectGetPrototypeOf(async function () {}).constructor;
  // "use strict" shares the first line so that script line numbers stay as written.
  // Reflect.construct reads an array-like without an iterator the script could have patched.
  const compile = (body, filename) => {
    const list = [];
    for (let i = 0; i < PARAMETERS.length; i++) list[i] = PARAMETERS[i];
    list[PARAMETERS.length] = `"use strict";${body}\n//# sourceURL=${filename}`;
    return ReflectConstruct(AsyncFunction, list);
  };
  const primitives = createPrimitives(channel, init, compile);
  const values = primitives.parameters(init.hasArgs ? init.args : undefined);

  addEventListener("unhandledrejection", (event) => {
    event.preventDefault();
    finish({ ok: false, error: describeError(event.reason) });
  });
  addEventListener("error", (event) => {
    event.preventDefault();
    finish({ ok: false, error: describeError(event.error) });
  });
  redirectConsole(globalThis.console);
  lockDeterminism(globalThis);
  confineGlobal(globalThis);
  whenProcess(globalThis, (process) => {
    lockProcessDeterminism(process);
    confineProcess(process);
  });
  channel.pump();

  let body;
  try {
    body = compile(init.body, init.filename);
  } catch (error) {
    finish({ ok: false, error: describeError(error) });
    return;
  }
  try {
    finishWithValue(await ReflectApply(body, undefined, values));
  } catch (error) {
    finish({ ok: false, error: describeError(error) });
  }
}

main().catch((error) => {
  // Only reachable before the channel exists (a broken init frame): tell the host on stderr.
  writeAll(stderrWriteSync, encodeUtf8(`svc guest: ${describeError(error).message}\n`));
  exitProcess(70);
});
