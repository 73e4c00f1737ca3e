/** How the page writes numbers, times and values: short, and always as text. */

/** `$0.0123`, `$12.40`; "—" when unknown. */
export function money(usd) {
  if (usd === null || usd === undefined) return "—";
  if (usd === 0) return "$0";
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** 1234 → "1.2k", 2_500_000 → "2.5M". */
export function count(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Tokens in and out of a usage object. */
export function tokens(usage) {
  if (!usage) return 0;
  return (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
}

/** 850 → "850 ms", 61_000 → "1m 1s". */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** How long ago an ISO time was: "12s", "3m", "2h", "4d". */
export function age(iso, now = Date.now()) {
  if (!iso) return "—";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** The time of day of an ISO time, in the browser's zone. */
export function clock(iso) {
  if (!iso) return "";
  return new Date(iso).toLocaleTimeString([], { hour12: false });
}

/** Milliseconds between two ISO times (the second default: now). */
export function between(start, end) {
  if (!start) return undefined;
  return (end ? Date.parse(end) : Date.now()) - Date.parse(start);
}

/** A value as text: strings as they are, anything else as indented JSON. */
export function asText(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** The first `max` characters of a value as text, with "…" when cut. */
export function preview(value, max = 160) {
  const text = asText(value).replace(/\s+/g, " ").trim();
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The run states that end a run. */
export const TERMINAL = new Set(["succeeded", "failed", "cancelled", "timeout", "interrupted"]);

/** A path segment from an id, encoded: ids come from the server, but a path is built from it. */
export function seg(id) {
  return encodeURIComponent(String(id));
}
