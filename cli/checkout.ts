/**
 * Where the files of the checkout are, for the modules of `cli/` that start other programs:
 * they run from their sources (`cli/<name>.ts`) or from the bundle `deno task build:host`
 * makes (`cli/host_bundle/<name>.js`, one folder deeper), so the root is found from where this
 * module was loaded.
 * @module
 */

/** The absolute path of `relative` (a path from the root of the checkout; "" is the root). */
export function checkoutPath(relative: string): string {
  const here = new URL(import.meta.url);
  const up = /\/cli\/host_bundle\/[^/]+$/.test(here.pathname) ? "../../" : "../";
  return decodeURIComponent(new URL(up + relative, here).pathname).replace(/(.)\/$/, "$1");
}
