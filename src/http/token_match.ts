/**
 * Which configured bearer token a request presents. The presented token is hashed (SHA-256)
 * and the digest compared in constant time with every configured token's, so neither a
 * token's content nor its length shows in the time an answer takes. The digest of a token that
 * is configured is computed once: it is found again through a seeded non-cryptographic hash of
 * the presented text and confirmed by a constant-time comparison of the text, so a valid
 * token costs a few hundred nanoseconds instead of a SHA-256 per request.
 * @module
 */
import { platform, timingSafeEqual } from "../platform/mod.ts";
import type { TokenBinding } from "./auth_settings.ts";

/** Options of {@linkcode tokenMatcher}. */
export interface TokenMatcherOptions {
  /**
   * The fast hash that finds a configured token's digest again.
   * @default a 53-bit hash seeded at random when the matcher is made
   */
  hash?: (text: string) => number;
}

/** What a presented token matched: the binding's owner (undefined when bound to none). */
export interface TokenMatch {
  /** The owner the token is bound to. */
  owner?: string;
}

const encoder = new TextEncoder();

function digest(text: string): Uint8Array {
  return platform().sha256(encoder.encode(text));
}

/**
 * A 53-bit hash of `text` under `seed` (cyrb53): spreads well and is cheap. It only finds a
 * digest computed before; the comparison that follows decides.
 */
function seededHash(seed: number): (text: string) => number {
  return (text) => {
    let h1 = 0xdeadbeef ^ seed;
    let h2 = 0x41c6ce57 ^ seed;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ code, 2654435761);
      h2 = Math.imul(h2 ^ code, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return 4294967296 * (2097151 & h2) + (h1 >>> 0);
  };
}

/**
 * The matcher of `bindings`: a presented token's match, or undefined when it is none of them.
 * Every configured digest is compared, whichever matches; the first binding of a token wins.
 */
export function tokenMatcher(
  bindings: readonly TokenBinding[],
  options: TokenMatcherOptions = {},
): (presented: string) => TokenMatch | undefined {
  const hash = options.hash ?? seededHash(crypto.getRandomValues(new Uint32Array(1))[0]!);
  const configured = bindings.map((binding) => ({
    digest: digest(binding.token),
    owner: binding.owner,
  }));
  // The digests of the configured tokens by their fast hash. Its size is the configuration's:
  // a presented token that is not configured is never kept.
  const known = new Map<number, Array<{ token: string; digest: Uint8Array }>>();
  for (const [index, binding] of bindings.entries()) {
    const bucket = known.get(hash(binding.token)) ?? [];
    bucket.push({ token: binding.token, digest: configured[index]!.digest });
    known.set(hash(binding.token), bucket);
  }
  return (presented) => {
    let given: Uint8Array | undefined;
    for (const candidate of known.get(hash(presented)) ?? []) {
      if (timingSafeEqual(presented, candidate.token)) given = candidate.digest;
    }
    given ??= digest(presented);
    let match: TokenMatch | undefined;
    for (const token of configured) {
      if (timingSafeEqual(given, token.digest) && match === undefined) match = token;
    }
    return match;
  };
}
