/**
 * What a long-lived server (`svc dashboard`, `svc daemon`) prints when its configuration is
 * reloaded: taken, refused (the running one stays, and why), or needing a restart.
 * @module
 */
import type { ReloadTrigger, Services } from "../src/services/mod.ts";
import { printLine } from "./terminal.ts";

const WHY: Record<ReloadTrigger, string> = {
  file: "the file changed",
  signal: "SIGHUP",
  request: "asked over the API",
  command: "asked",
};

/**
 * Watches the configuration file and SIGHUP, and prints one line per reload that changed
 * something or failed; returns a function that stops both.
 */
export function reportReloads(services: Services): () => void {
  const unsubscribe = services.configuration.subscribe(({ outcome, state, trigger }) => {
    const source = state.source ?? "the embedded default (no config.json)";
    if (outcome === "refused") {
      printLine(
        `svc: configuration not reloaded (${WHY[trigger]}); the running one stays: ${state.error}`,
      );
    } else if (outcome === "reloaded") {
      printLine(`svc: configuration reloaded from ${source} (${WHY[trigger]})`);
    } else if (trigger !== "file") {
      printLine(`svc: configuration unchanged (${source})`);
    }
    if (outcome !== "refused" && state.restart_needed.length > 0) {
      printLine(
        `svc: ${state.restart_needed.join(", ")} changed: that needs a restart to take effect`,
      );
    }
  });
  services.configuration.watch();
  return () => {
    unsubscribe();
    services.configuration.close();
  };
}
