// The guest's end of the bridge: newline-framed JSON-RPC 2.0 over stdin/stdout.
// The nonce is never a string: the bootstrap takes it out of the init frame's raw bytes before
// they are decoded, and keeps it only as the bytes of the frame prefix, in this module's
// closures. A heap snapshot lists strings, not the contents of byte buffers. Frames are built
// by concatenation, never as objects, so no user getter, toJSON or thenable ever sees them.
import {
  afterTask,
  ArrayBufferCtor,
  decodeUtf8,
  decodeUtf8Whole,
  encodeUtf8,
  ErrorCtor,
  JSONParse,
  MapCtor,
  MapPrototypeDelete,
  MapPrototypeGet,
  MapPrototypeSet,
  NumberIsSafeInteger,
  ObjectHasOwn,
  PromiseCtor,
  RangeErrorCtor,
  StringPrototypeIndexOf,
  StringPrototypeSlice,
  TypedArrayPrototypeFill,
  TypedArrayPrototypeGetBuffer,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeSet,
  TypedArrayPrototypeSubarray,
  TypeErrorCtor,
  Uint8ArrayCtor,
  writeAll,
} from "./primordials.js";
import { exitProcess, stdinRead, stdoutWriteSync } from "./runtime.js";
import { REPLAYED } from "./protocol.js";

const CHUNK = 65536;
/** Most bytes of positions one `replayed` notification carries before it is sent. */
const REPLAYED_BATCH_BYTES = 65536;
const NEWLINE = 10;
const QUOTE = 34;
const BACKSLASH = 92;
const ZERO = 48;

/** How the host's init frame begins: the nonce is the first parameter (src/engine/guest_session.ts). */
const INIT_HEAD = encodeUtf8('{"jsonrpc":"2.0","method":"init","params":{"nonce":"');
const FRAME_HEAD = encodeUtf8('\n{"jsonrpc":"2.0","nonce":"');
const FRAME_NONCE_END = encodeUtf8('",');

function malformedInit() {
  return new ErrorCtor("Cannot start the guest: the init frame does not begin with the nonce");
}

/**
 * Copies the nonce out of the init frame's bytes into the prefix of every guest frame, and
 * overwrites it in place with zeros, so that decoding the frame makes no string that holds it.
 */
function takeNonce(bytes, lineEnd) {
  const head = TypedArrayPrototypeGetLength(INIT_HEAD);
  if (lineEnd < head) throw malformedInit();
  for (let i = 0; i < head; i++) if (bytes[i] !== INIT_HEAD[i]) throw malformedInit();
  let end = head;
  while (end < lineEnd && bytes[end] !== QUOTE) {
    if (bytes[end] === BACKSLASH) throw malformedInit();
    end++;
  }
  if (end === lineEnd || end === head) throw malformedInit();
  const nonce = TypedArrayPrototypeSubarray(bytes, head, end);
  const size = TypedArrayPrototypeGetLength(nonce);
  const frameHead = TypedArrayPrototypeGetLength(FRAME_HEAD);
  const prefix = new Uint8ArrayCtor(
    frameHead + size + TypedArrayPrototypeGetLength(FRAME_NONCE_END),
  );
  TypedArrayPrototypeSet(prefix, FRAME_HEAD, 0);
  TypedArrayPrototypeSet(prefix, nonce, frameHead);
  TypedArrayPrototypeSet(prefix, FRAME_NONCE_END, frameHead + size);
  TypedArrayPrototypeFill(nonce, ZERO);
  return prefix;
}

/**
 * Reads the init frame, the first line on stdin. Returns its params (whose nonce reads as
 * zeros), the frame prefix that carries the real nonce as bytes, and the text that followed the
 * frame. Runs before the user's code exists.
 */
export async function readInit() {
  let bytes = new Uint8ArrayCtor(CHUNK);
  let length = 0;
  let lineEnd = -1;
  while (lineEnd === -1) {
    const capacity = TypedArrayPrototypeGetLength(bytes);
    if (length === capacity) {
      const larger = new Uint8ArrayCtor(capacity * 2);
      TypedArrayPrototypeSet(larger, bytes, 0);
      TypedArrayPrototypeFill(bytes, 0);
      bytes = larger;
    }
    const n = await stdinRead(TypedArrayPrototypeSubarray(bytes, length));
    if (n === null) {
      throw new ErrorCtor("Cannot start the guest: the host closed stdin before the init frame");
    }
    for (let i = length; i < length + n; i++) {
      if (bytes[i] === NEWLINE) {
        lineEnd = i;
        break;
      }
    }
    length += n;
  }
  const prefix = takeNonce(bytes, lineEnd);
  const init = JSONParse(decodeUtf8Whole(TypedArrayPrototypeSubarray(bytes, 0, lineEnd))).params;
  const rest = decodeUtf8(TypedArrayPrototypeGetBuffer(bytes), length - lineEnd - 1, lineEnd + 1);
  TypedArrayPrototypeFill(bytes, 0);
  return { init, prefix, rest };
}

/**
 * Opens the channel. `prefix` (from {@linkcode readInit}) is kept in this closure; the returned
 * functions never return it.
 */
export function openChannel(prefix, frameLimit, rest) {
  const pending = new MapCtor();
  let nextId = 1;
  const prefixSize = TypedArrayPrototypeGetLength(prefix);
  // Positions of calls answered here, not yet reported: a replayed prefix is reported in a few
  // frames instead of one per call, always before any later frame.
  let replayed = "";
  const replayedLimit = frameLimit / 4 < REPLAYED_BATCH_BYTES
    ? frameLimit / 4
    : REPLAYED_BATCH_BYTES;

  function flushReplayed() {
    if (replayed === "") return;
    const positions = replayed;
    replayed = "";
    send('"method":"' + REPLAYED + '","params":{"positions":[' + positions + "]}");
  }

  function write(body) {
    flushReplayed();
    send(body);
  }

  function send(body) {
    const tail = encodeUtf8(body + "}\n");
    const size = prefixSize + TypedArrayPrototypeGetLength(tail);
    if (size > frameLimit) {
      throw new RangeErrorCtor(
        `the message is ${size} bytes, over the bridge limit of ${frameLimit} bytes`,
      );
    }
    const frame = new Uint8ArrayCtor(size);
    TypedArrayPrototypeSet(frame, prefix, 0);
    TypedArrayPrototypeSet(frame, tail, prefixSize);
    writeAll(stdoutWriteSync, frame);
  }

  function notify(method, paramsJson) {
    write('"method":"' + method + '","params":' + paramsJson);
  }

  /** Reports a call answered from the replay offer, at the latest before the next frame. */
  function noteReplayed(positionJson) {
    if (replayed === "") afterTask(flushReplayed);
    replayed = replayed === "" ? positionJson : replayed + "," + positionJson;
    if (replayed.length >= replayedLimit) flushReplayed();
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

  return { request, notify, noteReplayed, pump };
}
