// Stage 0 of a microVM guest. The host passes this file inline, as the `data:` URL of the main
// module, so nothing of the host is mounted or named by path inside the VM. It reads the guest
// modules from stdin (a 4-byte big-endian length, then JSON: the entry's name and the modules
// as [name, source] pairs, each after the modules it imports), loads them as `blob:` modules
// (which a permissionless process may import) and so starts the bootstrap. It reads exactly the
// bundle's bytes: what follows on stdin, the init frame first, belongs to the bridge.
const LIMIT = 16 * 1024 * 1024;

function fail(message) {
  Deno.stderr.writeSync(new TextEncoder().encode(`svc guest stage 0: ${message}\n`));
  Deno.exit(70);
}

async function readExactly(size) {
  const bytes = new Uint8Array(size);
  let filled = 0;
  while (filled < size) {
    const n = await Deno.stdin.read(bytes.subarray(filled));
    if (n === null) fail("stdin ended inside the guest bundle");
    filled += n;
  }
  return bytes;
}

const header = await readExactly(4);
const size = new DataView(header.buffer).getUint32(0);
if (size > LIMIT) fail(`the guest bundle of ${size} bytes is over ${LIMIT}`);
const bundle = JSON.parse(new TextDecoder().decode(await readExactly(size)));
const urls = new Map();
for (const [name, source] of bundle.modules) {
  let text = source;
  for (const [dependency, url] of urls) {
    text = text.replaceAll(`"./${dependency}"`, JSON.stringify(url));
  }
  urls.set(name, URL.createObjectURL(new Blob([text], { type: "text/javascript" })));
}
const entry = urls.get(bundle.entry);
if (entry === undefined) fail(`the guest bundle has no module ${bundle.entry}`);
await import(entry);
// Loaded for good: nothing can fetch the modules again under these URLs.
for (const url of urls.values()) URL.revokeObjectURL(url);
