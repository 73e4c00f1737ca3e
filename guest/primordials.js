// Captured at module evaluation, before any user code exists. The user's code shares this
// realm and may replace any global or prototype method afterwards; the guest only ever calls
// what is captured here, so nothing it does on the nonce's path reaches user code.

const { bind, call } = Function.prototype;
/** Turns a method into a function taking `this` as first argument, immune to later patching. */
export const uncurryThis = bind.bind(call);

const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);

export const ArrayCtor = Array;
export const ArrayIsArray = Array.isArray;
export const ArrayPrototypePush = uncurryThis(Array.prototype.push);
export const ArrayPrototypeSort = uncurryThis(Array.prototype.sort);
export const ErrorCtor = Error;
export const ErrorCaptureStackTrace = Error.captureStackTrace;
export const JSONParse = JSON.parse;
export const JSONStringify = JSON.stringify;
export const MapCtor = Map;
export const MapPrototypeDelete = uncurryThis(Map.prototype.delete);
export const MapPrototypeGet = uncurryThis(Map.prototype.get);
export const MapPrototypeSet = uncurryThis(Map.prototype.set);
export const MapPrototypeHas = uncurryThis(Map.prototype.has);
export const NumberIsSafeInteger = Number.isSafeInteger;
export const ObjectCreate = Object.create;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectFreeze = Object.freeze;
export const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
export const ObjectGetOwnPropertyNames = Object.getOwnPropertyNames;
export const ObjectGetPrototypeOf = Object.getPrototypeOf;
export const ObjectHasOwn = Object.hasOwn;
export const ObjectKeys = Object.keys;
export const PromiseCtor = Promise;
export const PromisePrototypeThen = uncurryThis(Promise.prototype.then);
export const PromiseReject = Promise.reject.bind(Promise);
export const PromiseResolve = Promise.resolve.bind(Promise);
export const RangeErrorCtor = RangeError;
export const ReflectApply = Reflect.apply;
export const ReflectConstruct = Reflect.construct;
export const StringCtor = String;
export const StringPrototypeEndsWith = uncurryThis(String.prototype.endsWith);
export const StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
export const StringPrototypeLastIndexOf = uncurryThis(String.prototype.lastIndexOf);
export const StringPrototypeSlice = uncurryThis(String.prototype.slice);
export const StringPrototypeToUpperCase = uncurryThis(String.prototype.toUpperCase);
export const SymbolFor = Symbol.for;
const setTimeoutFn = globalThis.setTimeout;
/** Runs `fn` once the current task and its microtasks are done, with the runtime's own timer. */
export function afterTask(fn) {
  ReflectApply(setTimeoutFn, globalThis, [fn, 0]);
}
export const TypeErrorCtor = TypeError;
export const Uint8ArrayCtor = Uint8Array;
export const Int32ArrayCtor = Int32Array;
export const WeakMapCtor = WeakMap;
export const WeakMapPrototypeGet = uncurryThis(WeakMap.prototype.get);
export const WeakMapPrototypeSet = uncurryThis(WeakMap.prototype.set);
export const ArrayBufferCtor = ArrayBuffer;
export const TypedArrayPrototypeGetBuffer = uncurryThis(
  Object.getOwnPropertyDescriptor(TypedArrayPrototype, "buffer").get,
);
export const TypedArrayPrototypeFill = uncurryThis(TypedArrayPrototype.fill);
export const TypedArrayPrototypeSet = uncurryThis(TypedArrayPrototype.set);
export const TypedArrayPrototypeSubarray = uncurryThis(TypedArrayPrototype.subarray);
export const TypedArrayPrototypeGetLength = uncurryThis(
  Object.getOwnPropertyDescriptor(TypedArrayPrototype, "length").get,
);

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = uncurryThis(TextEncoder.prototype.encode);
const decode = uncurryThis(TextDecoder.prototype.decode);

/** UTF-8 bytes of a string. */
export function encodeUtf8(text) {
  return encode(encoder, text);
}

/**
 * A stream-safe UTF-8 decode of `length` bytes at `offset` of `buffer` (an ArrayBuffer): a
 * character split across two reads comes out whole with the second.
 */
export function decodeUtf8(buffer, length, offset = 0) {
  return decode(decoder, new Uint8ArrayCtor(buffer, offset, length), STREAM);
}
const STREAM = ObjectFreeze({ __proto__: null, stream: true });

const wholeDecoder = new TextDecoder();
/** UTF-8 text of a complete byte sequence, outside the stream of {@link decodeUtf8}. */
export function decodeUtf8Whole(bytes) {
  return decode(wholeDecoder, bytes);
}

/** Writes all of `bytes` to a file descriptor writer, looping over partial writes. */
export function writeAll(writeSync, bytes) {
  const buffer = TypedArrayPrototypeGetBuffer(bytes);
  const length = TypedArrayPrototypeGetLength(bytes);
  let offset = 0;
  while (offset < length) {
    offset += writeSync(new Uint8ArrayCtor(buffer, offset, length - offset));
  }
}
