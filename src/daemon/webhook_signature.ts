/**
 * Webhook signatures, checked over the raw body before anything parses it: GitHub's
 * `X-Hub-Signature-256` and Standard Webhooks' `webhook-id` / `webhook-timestamp` /
 * `webhook-signature`. Both are HMAC-SHA256; Web Crypto's `verify` compares in constant time.
 * @module
 */

/**
 * A verified delivery's id and the key its replay record is kept under (what the signature
 * covers, so that changing an unsigned header cannot make a replay look new); or why the
 * signature was refused, for the 401's message (never the expected value).
 */
export type SignatureResult =
  | { ok: true; deliveryId: string; replayKey: string }
  | { ok: false; reason: string };

/** Longest delivery id kept: it becomes part of a ledger key. */
export const DELIVERY_ID_LIMIT = 128;

const encoder = new TextEncoder();

function hmacKey(secret: Uint8Array, usage: "sign" | "verify" = "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    secret as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    [usage],
  );
}

/** The key bytes of a Standard Webhooks secret: `whsec_<base64>`, else the text itself. */
function standardSecret(secret: string): Uint8Array | undefined {
  return secret.startsWith("whsec_") ? base64Bytes(secret.slice(6)) : encoder.encode(secret);
}

function hexBytes(hex: string): Uint8Array | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return undefined;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function base64Bytes(text: string): Uint8Array | undefined {
  if (text.length > 1024 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  try {
    const raw = atob(text);
    return Uint8Array.from(raw, (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** A delivery id usable as a ledger key part: printable, bounded. */
function deliveryIdOf(value: string | null): string | undefined {
  if (value === null || value.length === 0 || value.length > DELIVERY_ID_LIMIT) return undefined;
  return /^[\x21-\x7e]+$/.test(value) ? value : undefined;
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * The replay key of a GitHub-style delivery: a SHA-256 digest of the decoded signature and the
 * body. `X-GitHub-Delivery` is not signed, so it cannot be the key; the decoded bytes (not the
 * header's text) make an upper-case spelling of the same signature the same key.
 */
async function githubReplayKey(signature: Uint8Array, body: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", concat(signature, body)));
  return `sha256:${[...digest].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * GitHub style: `X-Hub-Signature-256: sha256=<hex HMAC of the body>`, the delivery id in
 * `X-GitHub-Delivery`. Nothing signed carries a time, so a captured delivery verifies forever:
 * only its replay record (keyed on the signature and body) stops it from starting work again.
 */
export async function verifyGithub(
  headers: Headers,
  body: Uint8Array,
  secret: string,
): Promise<SignatureResult> {
  const header = headers.get("x-hub-signature-256");
  if (header === null) return { ok: false, reason: "the X-Hub-Signature-256 header is missing" };
  const signature = header.startsWith("sha256=") ? hexBytes(header.slice(7)) : undefined;
  if (!signature) {
    return { ok: false, reason: "the X-Hub-Signature-256 header is not sha256=<64 hex digits>" };
  }
  const key = await hmacKey(encoder.encode(secret));
  const valid = await crypto.subtle.verify(
    "HMAC",
    key,
    signature as Uint8Array<ArrayBuffer>,
    concat(body),
  );
  if (!valid) return { ok: false, reason: "the signature does not match the body" };
  const deliveryId = deliveryIdOf(headers.get("x-github-delivery"));
  if (!deliveryId) {
    return {
      ok: false,
      reason:
        `the X-GitHub-Delivery header is missing or not 1 to ${DELIVERY_ID_LIMIT} printable characters`,
    };
  }
  return { ok: true, deliveryId, replayKey: await githubReplayKey(signature, body) };
}

/**
 * Standard Webhooks: HMAC over `<webhook-id>.<webhook-timestamp>.<body>`; `webhook-signature`
 * holds one or more `v1,<base64>` (any may match, for key rotation); the timestamp must lie
 * within `toleranceS` of now. A `whsec_` secret is base64, as the specification says.
 */
export async function verifyStandard(
  headers: Headers,
  body: Uint8Array,
  options: { secret: string; toleranceS: number; now?: number },
): Promise<SignatureResult> {
  const deliveryId = deliveryIdOf(headers.get("webhook-id"));
  const timestamp = headers.get("webhook-timestamp");
  const signatures = headers.get("webhook-signature");
  if (!deliveryId) {
    return {
      ok: false,
      reason:
        `the webhook-id header is missing or not 1 to ${DELIVERY_ID_LIMIT} printable characters`,
    };
  }
  if (timestamp === null || !/^\d{1,12}$/.test(timestamp)) {
    return { ok: false, reason: "the webhook-timestamp header is missing or not a Unix time" };
  }
  const skew = Math.abs((options.now ?? Date.now()) / 1000 - Number(timestamp));
  if (skew > options.toleranceS) {
    return {
      ok: false,
      reason: `the webhook-timestamp is more than ${options.toleranceS} s from now`,
    };
  }
  if (signatures === null || signatures.length > 4096) {
    return { ok: false, reason: "the webhook-signature header is missing" };
  }
  const secretBytes = standardSecret(options.secret);
  if (!secretBytes) return { ok: false, reason: "the hook's secret is not valid whsec_ base64" };
  const key = await hmacKey(secretBytes);
  const signed = concat(encoder.encode(`${deliveryId}.${timestamp}.`), body);
  for (const part of signatures.split(" ").slice(0, 16)) {
    if (!part.startsWith("v1,")) continue;
    const signature = base64Bytes(part.slice(3));
    if (!signature || signature.length !== 32) continue;
    if (
      await crypto.subtle.verify("HMAC", key, signature as Uint8Array<ArrayBuffer>, signed)
    ) {
      // The id is signed and the timestamp bounds how long a copy verifies: the id is the key.
      return { ok: true, deliveryId, replayKey: deliveryId };
    }
  }
  return { ok: false, reason: "no v1 signature matches the body" };
}

/**
 * Signs an outbound delivery as Standard Webhooks: `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`, the value of `webhook-signature`, with the same secret format
 * {@linkcode verifyStandard} reads.
 */
export async function signStandard(
  secret: string,
  parts: { id: string; timestamp: number; body: Uint8Array },
): Promise<string> {
  const secretBytes = standardSecret(secret);
  if (!secretBytes) throw new Error("the secret is not valid whsec_ base64");
  const key = await hmacKey(secretBytes, "sign");
  const signed = concat(encoder.encode(`${parts.id}.${parts.timestamp}.`), parts.body);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signed));
  let binary = "";
  for (const byte of mac) binary += String.fromCharCode(byte);
  return `v1,${btoa(binary)}`;
}
