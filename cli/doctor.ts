/**
 * `svc doctor`: what each configured provider can do on this host, from the same report as
 * `GET /api/capabilities` (its tool and version, whether svc is tested with that version,
 * whether its credentials or endpoint answer, its sandbox levels). Bounded in time; key
 * variables are named, never shown.
 * @module
 */
import type { Command } from "commander";
import type { CapabilityReport, ProviderCapability } from "../src/schemas/mod.ts";
import { openHost } from "./host.ts";
import { printJson, printOut } from "./terminal.ts";
import { EXIT } from "./exit_status.ts";

function toolLine(tool: NonNullable<ProviderCapability["tool"]>): string {
  if (!tool.installed) return `not installed: ${tool.detail}`;
  const tested = tool.tested === true
    ? "the tested version"
    : tool.tested === false
    ? `not the tested version ${tool.tested_version}`
    : tool.tested_version
    ? `version unknown (tested: ${tool.tested_version})`
    : "version unknown";
  const version = tool.version ? `${tool.version}, ${tested}` : `${tested}: ${tool.detail}`;
  return `${version} (${tool.path})`;
}

/** The report for people: one block per provider. */
export function renderDoctor(report: CapabilityReport, configPath: string | null): string[] {
  const lines = [
    `configuration: ${configPath ?? "none (embedded default: the fake provider only)"}`,
    `sandbox.full: ${report.sandbox_full}; probed in ${report.took_ms} ms (bound ${
      report.deadline_ms / 1000
    } s)`,
  ];
  for (const p of report.providers) {
    lines.push("", `${p.name} (${p.type}, ${p.kind})`);
    if (p.tool) lines.push(`  tool         ${toolLine(p.tool)}`);
    const c = p.credentials;
    lines.push(`  credentials  ${c.state}: ${c.detail}${c.endpoint ? ` [${c.endpoint}]` : ""}`);
    lines.push(`  sandbox      ${p.sandbox_levels.join(", ")}`);
    if (p.sandbox_detail) lines.push(`               ${p.sandbox_detail}`);
  }
  return lines;
}

async function doctor(flags: { json?: boolean }): Promise<number> {
  await using host = await openHost();
  const report = await host.capabilities.report();
  if (flags.json) {
    await printJson({ config: host.configPath, ...report }, 2);
    return EXIT.ok;
  }
  await printOut(renderDoctor(report, host.configPath));
  return EXIT.ok;
}

/** Adds `doctor` to the program; `run` sets the exit status. */
export function addDoctorCommand(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  program
    .command("doctor")
    .description(
      "What each configured provider can do here: tool, version (tested or not), credentials, sandbox levels",
    )
    .option("--json", "print JSON (the shape of GET /api/capabilities)")
    .exitOverride()
    .action((flags: { json?: boolean }) => run(() => doctor(flags)));
}
