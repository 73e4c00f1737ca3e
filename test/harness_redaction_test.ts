/**
 * The one redaction of harness and API error messages: known secret values in every spelling,
 * `NAME=value` lines with secret names, token shapes; and it stays linear on hostile input.
 */
import assert from "node:assert/strict";
import { redact as redactApi } from "../src/dispatch/api/http.ts";
import { redact } from "../src/dispatch/harness/mod.ts";
import { isSecretName, redactSecrets } from "../src/dispatch/redaction.ts";

const KEY = "Zq8vY2xW4tR6uP0oN3mL";

function b64(text: string): string {
  return btoa(text);
}

Deno.test("a known secret is redacted as is, in lower and upper case, in hex and spaced out", () => {
  const hex = [...new TextEncoder().encode(KEY)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  for (
    const spelling of [
      KEY,
      KEY.toLowerCase(),
      KEY.toUpperCase(),
      hex,
      hex.toUpperCase(),
      [...KEY].join(" "),
      [...KEY].join("-"),
      [...KEY].join(" . "),
    ]
  ) {
    const out = redactSecrets(`before ${spelling} after`, { secrets: [KEY] });
    assert.equal(out, "before [redacted] after", spelling);
  }
});

Deno.test("a known secret is redacted in base64, standard and url-safe, at every alignment inside a longer run", () => {
  for (const prefix of ["", "a", "ab", "abc", "user:"]) {
    const encoded = b64(`${prefix}${KEY}?>?>trailing`);
    for (const text of [encoded, encoded.replaceAll("+", "-").replaceAll("/", "_")]) {
      const out = redactSecrets(`Authorization header ${text} end`, { secrets: [KEY] });
      assert.ok(out.includes("[redacted]"), `${prefix}: ${out}`);
      // What is left of the run cannot be decoded back to the secret.
      assert.ok(!out.includes(b64(KEY).slice(0, 12)), out);
    }
  }
});

Deno.test("NAME=value, NAME: value and JSON fields with secret names are redacted; others are kept", () => {
  const cases: Array<[string, string]> = [
    ["AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY=[redacted]"],
    ["export DB_PASSWORD=hunter2", "export DB_PASSWORD=[redacted]"],
    ["db_passwd: hunter2 (from env)", "db_passwd: [redacted] (from env)"],
    [
      '{"client_secret": "abc def", "user": "bob"}',
      '{"client_secret": "[redacted]", "user": "bob"}',
    ],
    ["GITHUB_TOKEN='ghx-123'", "GITHUB_TOKEN='[redacted]'"],
    ["apiKey=abc123", "apiKey=[redacted]"],
    ["x-api-key: k-123", "x-api-key: [redacted]"],
    ["MY_CREDENTIALS=/path/creds.json", "MY_CREDENTIALS=[redacted]"],
    ["PRIVATE_KEY=-----BEGIN", "PRIVATE_KEY=[redacted]"],
    ["proxy_auth=user:pw", "proxy_auth=[redacted]"],
    ["x=API_KEY=nested", "x=API_KEY=[redacted]"],
    ["input_tokens=123456789 max_tokens: 4096", "input_tokens=123456789 max_tokens: 4096"],
    ["keyboard=us monkey=1 path=/a", "keyboard=us monkey=1 path=/a"],
    ["Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer [redacted]"],
  ];
  for (const [input, expected] of cases) assert.equal(redactSecrets(input), expected, input);
  assert.ok(isSecretName("AWS_SECRET_ACCESS_KEY"));
  assert.ok(!isSecretName("monkey"));
});

Deno.test("token shapes are still redacted without being known", () => {
  assert.equal(
    redactSecrets(
      "sk-ant-api03-Zq8vY2xW4tR6uP0oN3mL AIzaSyA1234567890abcdefghijklmnopqrstu ghp_abcdefghijklmnopqrstuvwx AKIAIOSFODNN7EXAMPLE",
    ),
    "[redacted] [redacted] [redacted] [redacted]",
  );
});

Deno.test("the harness and API redactions are the shared one: both remove a known key's base64 copy", () => {
  const text = `sent ${b64(KEY)} and ${KEY.toLowerCase()}`;
  assert.equal(redact(text, [KEY]), "sent [redacted] and [redacted]");
  assert.equal(redactApi(text, KEY), "sent [redacted] and [redacted]");
});

Deno.test("redaction of a megabyte of hostile text finishes (no regex backtracks on it)", () => {
  const hostile = [
    "a".repeat(1 << 20),
    "a.".repeat(1 << 19),
    "KEY=".repeat(1 << 18),
    `${[...KEY].join("-").slice(0, -1)} `.repeat(1 << 14),
    '"api_key": "'.repeat(1 << 16),
  ];
  for (const text of hostile) {
    const out = redactSecrets(text, { secrets: [KEY, "a-a-a-a-a-a-a-a"] });
    assert.equal(typeof out, "string");
  }
});
