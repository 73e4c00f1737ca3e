/**
 * What a remote caller may see of this host's providers: the provider list and the capability
 * report as `/api/providers` and `/api/capabilities` answer them. A tool is named by its name,
 * version and availability, never by where it lives: a binary's absolute path (a configured
 * `command`, or where PATH found it) says who the user is and how the host is laid out, and a
 * remote caller needs none of it. The command line (`svc doctor`, `svc providers`) keeps the full
 * report: it runs as the operator at the terminal.
 * @module
 */
import type { CapabilityReport, ProviderCapability, ToolCapability } from "../schemas/mod.ts";
import type { ProviderStatus } from "./dispatcher.ts";

/**
 * An absolute path in a line of text: POSIX (`/a/b`, `~/a`) or Windows (`C:\a\b`), starting at
 * the beginning of the line or after a space, quote, bracket, `=` or `,`. A URL's own slashes
 * follow a letter or a colon, so they do not match.
 */
const ABSOLUTE_PATH = /(^|[\s"'`(=,[])((?:~|[A-Za-z]:)?[/\\][^\s"'`),;\]]*)/g;

/** The last segment of a path: the binary's name. */
function baseName(path: string): string {
  const segments = path.split(/[/\\]/).filter((segment) => segment !== "");
  return segments.at(-1) ?? "";
}

/**
 * `text` with every absolute path replaced by its last segment (`found /opt/x/bin/claude: 2.1`
 * becomes `found claude: 2.1`), so a message still names the tool and nothing of the host.
 */
export function withoutHostPaths(text: string): string {
  return text.replace(ABSOLUTE_PATH, (_match, before: string, path: string) => {
    const name = baseName(path);
    return `${before}${name === "" ? "(a path on the host)" : name}`;
  });
}

/** A tool as a remote caller sees it: its name, never its path. */
function remoteTool(tool: ToolCapability): ToolCapability {
  return {
    ...tool,
    command: baseName(tool.command) || tool.command,
    path: null,
    detail: withoutHostPaths(tool.detail),
  };
}

function remoteProvider(provider: ProviderCapability): ProviderCapability {
  return {
    ...provider,
    tool: provider.tool ? remoteTool(provider.tool) : null,
    credentials: {
      ...provider.credentials,
      detail: withoutHostPaths(provider.credentials.detail),
    },
    sandbox_detail: provider.sandbox_detail === null
      ? null
      : withoutHostPaths(provider.sandbox_detail),
  };
}

/**
 * The capability report as a remote caller gets it: each tool's name, version, availability and
 * tested version, without the host paths (`path` is null, `command` the binary's name, details
 * name tools by name).
 */
export function remoteCapabilityReport(report: CapabilityReport): CapabilityReport {
  return { ...report, providers: report.providers.map(remoteProvider) };
}

/** The provider list as a remote caller gets it: every reason names tools by name, never path. */
export function remoteProviderStatus(providers: readonly ProviderStatus[]): ProviderStatus[] {
  return providers.map((provider) => ({ ...provider, reason: withoutHostPaths(provider.reason) }));
}
