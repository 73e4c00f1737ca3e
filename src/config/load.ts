import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";
import { configFile } from "../host_env/mod.ts";
import { type Config, ConfigSchema } from "./schema.ts";

/** The configuration and where it came from (`null`: the embedded default). */
export interface LoadedConfig {
  /** The validated configuration. */
  config: Config;
  /** The file it was read from; null for the embedded default. */
  path: string | null;
}

/** The embedded default: the `fake` provider only. */
export function defaultConfig(): Config {
  return ConfigSchema.parse({});
}

/**
 * Reads and validates the configuration: the file `SVC_CONFIG` names, else
 * `<home>/config.json`, else the embedded default. A bad file is an error naming the path of
 * the bad field, never a silent fallback.
 */
export async function loadConfig(home: string): Promise<LoadedConfig> {
  const p = platform();
  const { path, explicit } = configFile(home);
  let text: string;
  try {
    text = await p.readTextFile(path);
  } catch (error) {
    const missing = error instanceof Error && error.name === "NotFound";
    if (missing && !explicit) return { config: defaultConfig(), path: null };
    throw new SvcError(
      "invalid_argument",
      `Cannot read the configuration ${path}: ${missing ? "no such file" : "it cannot be read"}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new SvcError(
      "invalid_argument",
      `Cannot read the configuration ${path}: it is not JSON (${
        error instanceof Error ? error.message : "syntax error"
      })`,
    );
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "(top level)";
    const message = issue.code === "unrecognized_keys" && issue.keys
      ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${
        issue.keys.map((k) => `'${k}'`).join(", ")
      }`
      : issue.message;
    throw new SvcError(
      "invalid_argument",
      `Cannot read the configuration ${path}: ${field}: ${message}`,
    );
  }
  return { config: parsed.data, path };
}
