/**
 * Node's built-in modules as Deno 2.9 offers them (`builtinModules` of `node:module`). A
 * permissionless process may still import every one of them, and some hand out the process's
 * own heap (`node:v8`), a debugger (`node:inspector`), fresh realms (`node:vm`,
 * `node:worker_threads`) or V8 flags. test/guest_security_test.ts fails when the guest's Deno
 * knows one that is not listed here.
 */
export const NODE_BUILTIN_MODULES: readonly string[] = [
  "_http_agent",
  "_http_common",
  "_http_outgoing",
  "_http_server",
  "_stream_duplex",
  "_stream_passthrough",
  "_stream_readable",
  "_stream_transform",
  "_stream_writable",
  "_tls_common",
  "_tls_wrap",
  "assert",
  "assert/strict",
  "async_hooks",
  "buffer",
  "child_process",
  "cluster",
  "console",
  "constants",
  "crypto",
  "dgram",
  "diagnostics_channel",
  "dns",
  "dns/promises",
  "domain",
  "events",
  "fs",
  "fs/promises",
  "http",
  "http2",
  "https",
  "inspector",
  "inspector/promises",
  "module",
  "net",
  "os",
  "path",
  "path/posix",
  "path/win32",
  "perf_hooks",
  "process",
  "punycode",
  "querystring",
  "readline",
  "readline/promises",
  "repl",
  "sqlite",
  "stream",
  "stream/consumers",
  "stream/promises",
  "stream/web",
  "string_decoder",
  "sys",
  "test",
  "test/reporters",
  "timers",
  "timers/promises",
  "tls",
  "trace_events",
  "tty",
  "url",
  "util",
  "util/types",
  "v8",
  "vm",
  "wasi",
  "worker_threads",
  "zlib",
];

/** The error a script gets for importing `specifier`; the static check's wording, at run time. */
export function refusedImportMessage(specifier: string): string {
  return `import("${specifier}") is not available in workflow scripts: scripts import nothing, ` +
    "they reach the outside only through agent()";
}

/**
 * The import map of every guest: each `node:` built-in resolves to a `data:` module that throws
 * when evaluated. An import map binds every module of the process, `data:` and `blob:` ones
 * included, so code the script builds at run time (`Function("return import(x)")`), which the
 * host's static check cannot see, gets the same refusal.
 */
export function guestImportMap(): string {
  const imports: Record<string, string> = {};
  for (const name of NODE_BUILTIN_MODULES) {
    const specifier = `node:${name}`;
    const source = `throw new Error(${JSON.stringify(refusedImportMessage(specifier))});`;
    imports[specifier] = `data:text/javascript,${encodeURIComponent(source)}`;
  }
  return JSON.stringify({ imports });
}
