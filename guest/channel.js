// The guest's end of the bridge: newline-framed JSON-RPC 2.0 over stdin/stdout.
// The nonce lives only in this module's closures. Frames are built by string concatenation,
// never as objects, so no user getter, toJSON or thenable ever sees it.
import {
  ArrayBufferCtor,
  decodeUtf8,
  encodeUtf8,
  ErrorCtor,
  exitProcess,
  JSONParse,
  MapCtor,
  MapPrototypeDelete,
  MapPrototypeGet,
  MapPrototypeSet,
  NumberIsSafeInteger,
  ObjectHasOwn,
  PromiseCtor,
  RangeErrorCtor,
  stdinRead,
  stdoutWriteSync,
  StringPrototypeIndexOf,
  StringPrototypeSlice,
  TypedArrayPrototypeGetLength,
  TypeErrorCtor,
  Uint8ArrayCtor,
  writeAll,
} from "./primordials.js";

const CHUNK = 65536;

/** Reads stdin up to the first newline and returns that line and whatever followed it. */
export async function readFirstLine() {
  const buffer = new ArrayBufferCtor(CHUNK);
  const view = new Uint8ArrayCtor(buffer);
  let text = "";
  while (true) {
    const n = await stdinRead(view);
    if (n === null) {
      throw new ErrorCtor("Cannot start the guest: the host closed stdin before the init frame");
    }
    text += decodeUtf8(buffer, n);
    const newline = StringPrototypeIndexOf(text, "\n");
    if (newline !== -1) {
      return {
        line: StringPrototypeSlice(text, 0, newline),
        rest: StringPrototypeSlice(text, newline + 1),
      };
    }
  }
}

/**
 * Opens the channel. `nonce` is kept in this closure; the returned functions never return it.
 * `onHostClosed` runs when the host closes stdin (it is going away).
 */
export function openChannel(nonce, frameLimit, rest) {
  const pending = new MapCtor();
  let nextId = 1;
  const prefix = '\n{"jsonrpc":"2.0","nonce":"' + nonce + '",';

  function write(body) {
    const bytes = encodeUtf8(prefix + body + "}\n");
    const size = TypedArrayPrototypeGetLength(bytes);
    if (size > frameLimit) {
      throw new RangeErrorCtor(
        `the message is ${size} bytes, over the bridge limit of ${frameLimit} bytes`,
      );
    }
    writeAll(stdoutWriteSync, bytes);
  }

  function notify(method, paramsJson) {
    write('"method":"' + method + '","params":' + paramsJson);
  }

  function request(method, paramsJson) {
    const id = nextId++;
    return new PromiseCtor((resolve, reject) => {
      write('"id":' + id + ',"method":"' + method + '","params":' + paramsJson);
      MapPrototypeSet(pending, id, { __proto__: null, resolve, reject });
    });
  }

  function deliver(line) {
    let message;
    try {
      message = JSONParse(line);
    } catch {
      return;
    }
    if (message === null || typeof message !== "object" || !ObjectHasOwn(message, "id")) return;
    const id = message.id;
    if (!NumberIsSafeInteger(id)) return;
    const waiter = MapPrototypeGet(pending, id);
    if (waiter === undefined) return;
    MapPrototypeDelete(pending, id);
    if (ObjectHasOwn(message, "error")) {
      const error = message.error;
      const text = error !== null && typeof error === "object" && typeof error.message === "string"
        ? error.message
        : "the host refused the call";
      const kind = error !== null && typeof error === "object" && ObjectHasOwn(error, "data") &&
          error.data !== null && typeof error.data === "object"
        ? error.data.type
        : undefined;
      waiter.reject(
        kind === "TypeError"
          ? new TypeErrorCtor(text)
          : kind === "RangeError"
          ? new RangeErrorCtor(text)
          : new ErrorCtor(text),
      );
    } else {
      waiter.resolve(message.result);
    }
  }

  async function pump() {
    const buffer = new ArrayBufferCtor(CHUNK);
    const view = new Uint8ArrayCtor(buffer);
    let text = rest;
    while (true) {
      let newline = StringPrototypeIndexOf(text, "\n");
      while (newline !== -1) {
        deliver(StringPrototypeSlice(text, 0, newline));
        text = StringPrototypeSlice(text, newline + 1);
        newline = StringPrototypeIndexOf(text, "\n");
      }
      const n = await stdinRead(view);
      // The host closed its end: it has gone or wants us gone.
      if (n === null) exitProcess(70);
      text += decodeUtf8(buffer, n);
    }
  }

  return { request, notify, pump };
}
