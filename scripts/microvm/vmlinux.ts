/**
 * The PVH-bootable ELF `vmlinux` inside a packaged x86 `vmlinuz` (a bzImage): QEMU's `microvm`
 * machine boots only the ELF. Debian's cloud kernel compresses it with LZ4 (legacy frame),
 * which this module decodes itself, so the build needs no decompressor beyond the packages the
 * README names.
 * @module
 */

/** The legacy LZ4 frame's magic, as the kernel's build writes it (`lz4 -l`). */
const LZ4_LEGACY_MAGIC = 0x184c2102;
const ELF_MAGIC = [0x7f, 0x45, 0x4c, 0x46];

function fail(reason: string): never {
  throw new Error(`Cannot extract vmlinux: ${reason}`);
}

/** Decodes one LZ4 block from `src[start, end)` into `out` at `op`; returns the new `op`. */
function decodeBlock(src: Uint8Array, start: number, end: number, out: Uint8Array, op: number) {
  let ip = start;
  while (ip < end) {
    const token = src[ip++]!;
    let literals = token >> 4;
    if (literals === 15) {
      let byte;
      do {
        byte = src[ip++]!;
        literals += byte;
      } while (byte === 255);
    }
    out.set(src.subarray(ip, ip + literals), op);
    ip += literals;
    op += literals;
    if (ip >= end) break;
    const offset = src[ip]! | (src[ip + 1]! << 8);
    ip += 2;
    if (offset === 0 || offset > op) fail("the LZ4 data refers before its start");
    let length = token & 15;
    if (length === 15) {
      let byte;
      do {
        byte = src[ip++]!;
        length += byte;
      } while (byte === 255);
    }
    length += 4;
    if (offset >= length) out.copyWithin(op, op - offset, op - offset + length);
    else for (let i = 0; i < length; i++) out[op + i] = out[op - offset + i]!;
    op += length;
  }
  return op;
}

/** Decodes a legacy LZ4 frame followed by its 4-byte uncompressed size (the kernel's payload). */
function decodeLz4Payload(payload: Uint8Array): Uint8Array {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  if (view.getUint32(0, true) !== LZ4_LEGACY_MAGIC) fail("the payload is not LZ4 (legacy frame)");
  const size = view.getUint32(payload.length - 4, true);
  const out = new Uint8Array(size);
  let ip = 4;
  let op = 0;
  const end = payload.length - 4;
  while (ip + 4 <= end) {
    const blockSize = view.getUint32(ip, true);
    ip += 4;
    if (blockSize === LZ4_LEGACY_MAGIC) continue;
    if (ip + blockSize > end) fail("an LZ4 block runs past the payload");
    op = decodeBlock(payload, ip, ip + blockSize, out, op);
    ip += blockSize;
  }
  if (op !== size) fail(`the payload decoded to ${op} bytes, not the ${size} it declares`);
  return out;
}

/**
 * The ELF kernel inside `bzImage`: its payload located through the setup header
 * (`setup_sects`, `payload_offset`, `payload_length`) and decoded.
 */
export function extractVmlinux(bzImage: Uint8Array): Uint8Array {
  const view = new DataView(bzImage.buffer, bzImage.byteOffset, bzImage.byteLength);
  if (view.getUint32(0x202, true) !== 0x53726448) fail("the file is not a bzImage (no HdrS)");
  const setupSects = bzImage[0x1f1] || 4;
  const start = (setupSects + 1) * 512 + view.getUint32(0x248, true);
  const payload = bzImage.subarray(start, start + view.getUint32(0x24c, true));
  const elf = decodeLz4Payload(payload);
  if (!ELF_MAGIC.every((byte, i) => elf[i] === byte)) fail("the payload is not an ELF image");
  return elf;
}
