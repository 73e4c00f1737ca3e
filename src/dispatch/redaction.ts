/**
 * The one redaction of svc's dispatch layer: what a harness tool or a model API wrote is passed
 * through {@linkcode redactSecrets} before it reaches an error message. It removes known secret
 * values (the provider's key variables) in every spelling a tool is likely to print (as is, in
 * another case, base64, hex, spaced out), the value of every `NAME=value` whose name says it is
 * a secret, and credential-shaped tokens. Every pattern is linear in the input: no nested
 * quantifiers, no overlapping alternatives, because the input is a tool's output.
 * @module
 */

/** What a redacted part is replaced by. */
export const REDACTED = "[redacted]";

/** Secrets shorter than this are left alone: too many false hits, too little to hide. */
const MIN_SECRET_LENGTH = 8;
/** Shorter secrets are matched only as they are, never in another spelling. */
const MIN_LITERAL_LENGTH = 4;
/** Encodings shorter than this (a short secret's aligned base64) are not matched. */
const MIN_VARIANT_LENGTH = 8;

const TOKEN_SHAPES: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];
const BEARER = /\b(Bearer|Basic)[ \t]+[A-Za-z0-9._~+/=-]{8,}/gi;

/**
 * The start of `NAME <sep>`: a name not preceded by a name character, then `=`, `:` or a JSON
 * `": "`. The name is one greedy run, so each start is tried once.
 */
const NAME_AND_SEPARATOR = /(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)(["']?[ \t]*[:=][ \t]*)/g;
/** A name segment that says "secret": `KEY`, `API_KEY`'s `KEY`, `SECRETKEY`, `PASSWORD`, ... */
const SECRET_SEGMENT =
  /^(?:API|ACCESS|SECRET|PRIVATE|CLIENT|SESSION|REFRESH|BEARER|ID|AUTH|MASTER|SERVICE)?(?:KEY|KEYS|TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PWD|CREDENTIAL|CREDENTIALS|AUTH|AUTHORIZATION|PRIVATE|APIKEY)$/;
/** Where a name splits into segments: `_`, `-`, `.`, and camelCase humps. */
const SEGMENT_BREAK = /[_.-]|(?<=[a-z0-9])(?=[A-Z])/;
const QUOTED_VALUE = { '"': /(?:[^"\\\n]|\\.)*/y, "'": /(?:[^'\\\n]|\\.)*/y } as const;
const BARE_VALUE = /[^\s"',;]+/y;
/** A bare value that is an authorization scheme: the token after it is BEARER's. */
const SCHEME = /^(?:Bearer|Basic)$/i;

/** Characters that may stand between the characters of a spaced-out secret. */
const SEPARATORS = " \t\r\n._:,;'\"|/\\-";

/** Whether a variable's or field's name says its value is a secret. */
export function isSecretName(name: string): boolean {
  return name.split(SEGMENT_BREAK).some((segment) => SECRET_SEGMENT.test(segment.toUpperCase()));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * The base64 text of `secret` wherever it starts in a longer run: for each of the three byte
 * alignments, the characters that depend on the secret's bytes only.
 */
function base64Variants(bytes: Uint8Array): string[] {
  // The secret encoded on its own, padding and all: the tail characters are known too.
  const whole = base64(bytes);
  const out: string[] = [whole, whole.replace(/=+$/, "")];
  for (const [pad, skip] of [[0, 0], [1, 2], [2, 3]] as const) {
    const padded = new Uint8Array(pad + bytes.length);
    padded.set(bytes, pad);
    const full = Math.floor(padded.length / 3) * 4;
    const text = base64(padded).slice(skip, full);
    if (text.length >= MIN_VARIANT_LENGTH) out.push(text);
  }
  return out.flatMap((text) => [text, text.replaceAll("+", "-").replaceAll("/", "_")]);
}

/**
 * One pattern for a secret written with separators between its characters (`s k - a n t`,
 * `s-k-a-n-t`). The separators that may appear are those the secret does not contain, so each
 * step has one way to match and the pattern stays linear.
 */
function spacedPattern(secret: string): string {
  const own = new Set(secret.toLowerCase() + secret.toUpperCase());
  const gap = [...SEPARATORS].filter((c) => !own.has(c)).map(escapeRegExp).join("");
  const between = gap === "" ? "" : `[${gap}]{0,3}`;
  return [...secret].map(escapeRegExp).join(between);
}

/** Compiles the patterns of known secret values; undefined when there is none worth matching. */
function secretPattern(secrets: readonly string[]): RegExp | undefined {
  const alternatives = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) {
      // Too short for its spellings to be told from ordinary text: only the value as it is.
      if (secret.length >= MIN_LITERAL_LENGTH) alternatives.add(escapeRegExp(secret));
      continue;
    }
    const bytes = new TextEncoder().encode(secret);
    alternatives.add(spacedPattern(secret));
    for (const variant of base64Variants(bytes)) alternatives.add(escapeRegExp(variant));
    const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
    alternatives.add(hex);
  }
  if (alternatives.size === 0) return undefined;
  // Longest first, so that a longer spelling is taken whole before a shorter one inside it.
  const sorted = [...alternatives].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.join("|"), "gi");
}

/** Redacts the values of `NAME=value`, `NAME: value` and `"NAME": "value"` with secret names. */
function redactNamedValues(text: string): string {
  let out = "";
  let copied = 0;
  NAME_AND_SEPARATOR.lastIndex = 0;
  for (let match = NAME_AND_SEPARATOR.exec(text); match; match = NAME_AND_SEPARATOR.exec(text)) {
    const name = match[1]!;
    const separator = match[2]!;
    const valueStart = match.index + match[0].length;
    if (!isSecretName(name)) {
      // Scan on from just after the name: `x=API_KEY=...` still finds API_KEY.
      NAME_AND_SEPARATOR.lastIndex = match.index + name.length;
      continue;
    }
    const quote = text[valueStart];
    let end = valueStart;
    if (quote === '"' || quote === "'") {
      const inner = QUOTED_VALUE[quote];
      inner.lastIndex = valueStart + 1;
      const found = inner.exec(text);
      end = valueStart + 1 + (found?.[0].length ?? 0);
      if (end > valueStart + 1) {
        out += text.slice(copied, valueStart + 1) + REDACTED;
        copied = end;
      }
    } else {
      BARE_VALUE.lastIndex = valueStart;
      const found = BARE_VALUE.exec(text);
      end = valueStart + (found?.[0].length ?? 0);
      // A value already redacted (a token shape) keeps what follows it: `key=[redacted])`.
      if (found && !SCHEME.test(found[0]) && !found[0].startsWith(REDACTED)) {
        out += text.slice(copied, valueStart) + REDACTED;
        copied = end;
      }
    }
    NAME_AND_SEPARATOR.lastIndex = Math.max(end, match.index + name.length + separator.length);
  }
  return out + text.slice(copied);
}

/** What {@linkcode redactSecrets} knows beyond the shapes it recognises by itself. */
export interface RedactOptions {
  /** Secret values to remove in every spelling: the provider's key variables' values. */
  secrets?: readonly string[];
}

/**
 * Removes what looks like a credential from text a tool or an API wrote: known secret values
 * (as is, in any case, base64 standard and url-safe at each alignment, hex, spaced out),
 * `NAME=value` pairs whose name says secret (`DB_PASSWORD=...`, `"api_key": "..."`), bearer
 * and basic credentials, and token shapes (`sk-...`, `AIza...`, `ghp_...`, `AKIA...`, JWTs).
 */
export function redactSecrets(text: string, options: RedactOptions = {}): string {
  let out = text;
  const known = secretPattern(options.secrets ?? []);
  if (known) out = out.replace(known, REDACTED);
  for (const pattern of TOKEN_SHAPES) out = out.replace(pattern, REDACTED);
  out = out.replace(BEARER, (_all, scheme: string) => `${scheme} ${REDACTED}`);
  return redactNamedValues(out);
}
