/**
 * The Gemini home svc keeps for a provider with a base URL. Gemini CLI 0.61 picks its auth type
 * from `security.auth.selectedType` in a settings file, and with only `GOOGLE_GEMINI_BASE_URL`
 * set it picks the "gateway" type, which headless runs refuse (exit 41). No environment variable
 * selects the API-key type in headless mode (`GEMINI_DEFAULT_AUTH_TYPE` is read by the
 * interactive UI only), and the system settings files that `GEMINI_CLI_SYSTEM_SETTINGS_PATH`
 * and `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` name are skipped unless root owns them and every parent.
 * So svc points `GEMINI_CLI_HOME` at a directory of its own and writes the settings there,
 * never into the user's `~/.gemini`. Keys an operator adds to that file are kept.
 * @module
 */
import { withoutHostPaths } from "../remote_view.ts";
import { SvcError } from "../../errors/mod.ts";
import { joinPath, platform } from "../../platform/mod.ts";
import { isRecord, type JsonRecord } from "./json_fields.ts";

/**
 * The settings svc sets in its Gemini home: API-key auth (the key and the base URL come from
 * the environment), and no usage statistics or telemetry (no variable turns the statistics off).
 */
export const GEMINI_MANAGED_SETTINGS: Readonly<Record<string, JsonRecord>> = {
  security: { auth: { selectedType: "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
};

/** `base` with every key of `managed` set, nested objects merged. */
function merged(base: JsonRecord, managed: Readonly<Record<string, unknown>>): JsonRecord {
  const out: JsonRecord = { ...base };
  for (const [key, value] of Object.entries(managed)) {
    out[key] = isRecord(value) ? merged(isRecord(base[key]) ? base[key] : {}, value) : value;
  }
  return out;
}

async function readSettings(path: string): Promise<JsonRecord> {
  let text: string;
  try {
    text = await platform().readTextFile(path);
  } catch {
    return {};
  }
  try {
    const value: unknown = JSON.parse(text);
    if (isRecord(value)) return value;
  } catch {
    // Rewritten below.
  }
  throw new Error("its .gemini/settings.json is not a JSON object");
}

/**
 * Makes `dir` a Gemini home whose `.gemini/settings.json` holds the managed settings (written
 * only when they change, through a rename, so that concurrent calls never see half a file).
 */
export async function ensureGeminiHome(provider: string, dir: string): Promise<void> {
  const p = platform();
  const gemini = joinPath(dir, ".gemini");
  const path = joinPath(gemini, "settings.json");
  try {
    await p.mkdir(gemini);
    const current = await readSettings(path);
    const next = merged(current, GEMINI_MANAGED_SETTINGS);
    if (JSON.stringify(next) === JSON.stringify(current)) return;
    const temp = `${path}.${p.pid()}.${crypto.randomUUID()}.tmp`;
    await p.writeTextFile(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
    await p.rename(temp, path);
  } catch (error) {
    throw new SvcError(
      "provider_failed",
      // The folder is named by role, and any path in the system's words by its last part: a
      // dispatch's error reaches remote callers.
      `Cannot dispatch to ${provider}: cannot write Gemini's settings in the Gemini home svc keeps for it: ${
        withoutHostPaths(error instanceof Error ? error.message : String(error))
      }`,
      { cause: error },
    );
  }
}
