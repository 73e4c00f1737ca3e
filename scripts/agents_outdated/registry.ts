/**
 * The pieces of `deno task agents:outdated` that need no network: which registry to read, the
 * URL of a package's document there, and which of its versions are newer releases than a
 * tested one.
 * @module
 */

/** The public npm registry. */
export const NPM_REGISTRY = "https://registry.npmjs.org";

/**
 * The registry to read: `--registry <url>` (or `--registry=<url>`), else `fromEnv`
 * (`npm_config_registry`, as npm itself reads it), else the public registry. Throws on an
 * unknown argument or a URL that is not http(s).
 */
export function registryOf(args: readonly string[], fromEnv: string | undefined): string {
  let chosen: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--registry") chosen = args[++i];
    else if (arg.startsWith("--registry=")) chosen = arg.slice("--registry=".length);
    else throw new Error(`Cannot list newer releases: unknown argument ${JSON.stringify(arg)}`);
    if (chosen === undefined) {
      throw new Error("Cannot list newer releases: --registry needs a URL");
    }
  }
  const registry = chosen ?? (fromEnv || NPM_REGISTRY);
  let url: URL;
  try {
    url = new URL(registry);
  } catch {
    throw new Error(
      `Cannot list newer releases: the registry ${JSON.stringify(registry)} is no URL`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`Cannot list newer releases: the registry ${url.href} is not http or https`);
  }
  return url.href.replace(/\/+$/, "");
}

/** The URL of a package's document: a scoped name keeps its `@` and encodes its slash. */
export function packageUrl(registry: string, pkg: string): string {
  return `${registry}/${pkg.startsWith("@") ? `@${encodeURIComponent(pkg.slice(1))}` : pkg}`;
}

/** A release version `major.minor.patch` as numbers; undefined for pre-releases and the rest. */
function release(version: string): [number, number, number] | undefined {
  const match = /^(\d{1,9})\.(\d{1,9})\.(\d{1,9})$/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** The releases in `versions` newer than `tested`, oldest first (pre-releases left out). */
export function newerReleases(versions: readonly string[], tested: string): string[] {
  const base = release(tested);
  if (!base) throw new Error(`Cannot list newer releases: ${tested} is not a release version`);
  return versions
    .map((version) => ({ version, parts: release(version) }))
    .filter((v): v is { version: string; parts: [number, number, number] } =>
      v.parts !== undefined && compare(v.parts, base) > 0
    )
    .sort((a, b) => compare(a.parts, b.parts))
    .map((v) => v.version);
}
