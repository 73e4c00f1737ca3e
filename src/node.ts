/**
 * Entry of the npm package's library API. Under Node it installs the Node platform before
 * anything else can reach the runtime; under Deno it leaves the Deno one in place. It then
 * offers the whole library API of `./mod.ts`.
 * @module
 */
import { setPlatform } from "./platform/mod.ts";
import { nodePlatform } from "./platform/node.ts";

if (!("Deno" in globalThis)) setPlatform(nodePlatform);

export * from "./mod.ts";
export { nodePlatform };
