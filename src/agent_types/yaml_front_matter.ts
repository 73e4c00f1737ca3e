/**
 * The YAML reader of agent files' front matter, in a module of its own so that the YAML library
 * is loaded only when an agent type is read: a static named import, which the host bundle's
 * module interop resolves as the sources do (a dynamic import of the library itself does not).
 * @module
 */
import { parse } from "yaml";

/** Parses an agent file's front matter, bounded: few aliases, no duplicate keys. */
export function parseFrontMatter(text: string): unknown {
  return parse(text, { maxAliasCount: 10, uniqueKeys: true, prettyErrors: false });
}
