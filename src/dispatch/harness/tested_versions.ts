/**
 * The versions of the four coding-agent command lines that svc is tested with: CI installs
 * exactly these from the npm registry and drives each through svc against a local stand-in of
 * its model API. The one place to bump them (docs/PROVIDERS.md, "Bumping a tool").
 * @module
 */

/** One tool's npm package and the version CI installs. */
export interface TestedTool {
  /** The npm package that installs the tool. */
  package: string;
  /** The version svc is tested with. */
  version: string;
}

/** The tested version of each tool, by the tool's name. */
export const TESTED_VERSIONS: Readonly<
  Record<"claude" | "codex" | "gemini" | "opencode", TestedTool>
> = {
  claude: { package: "@anthropic-ai/claude-code", version: "2.1.337" },
  codex: { package: "@openai/codex", version: "0.171.0" },
  gemini: { package: "@google/gemini-cli", version: "0.61.0" },
  opencode: { package: "opencode-ai", version: "1.18.33" },
};
