/**
 * The dashboard HTTP server: the authenticated `/api/*` surface over the services, its
 * OpenAPI document, and server-sent event streams read from the event feed.
 * @module
 */
export { type DashboardApp, dashboardApp, type DashboardAppOptions } from "./app.ts";
export {
  type AuthSettings,
  authSettingsFromEnv,
  checkToken,
  generateToken,
  LOCAL_OWNER,
  parseOwnerToken,
  parseTokenFile,
  type TokenBinding,
  withTokens,
} from "./auth_settings.ts";
export type { ApiErrorBody } from "./errors.ts";
// The A2A server (src/a2a/) authenticates and answers errors as the dashboard does.
export { dashboardAuth, type DashboardAuthOptions } from "./auth.ts";
export type { DashboardEnv } from "./env.ts";
export { errorResponse, renderError } from "./errors.ts";
export { MAX_BODY_BYTES } from "./json_body.ts";
export { PAGE_CSP, pageDir } from "./page.ts";
export {
  DASHBOARD_HOST,
  DASHBOARD_PORT,
  type DashboardServer,
  serveDashboard,
  type ServeDashboardOptions,
} from "./serve.ts";
export { type DaemonApp, daemonApp, type DaemonAppOptions } from "./daemon_app.ts";
export {
  DAEMON_PORT,
  type DaemonServer,
  serveDaemon,
  type ServeDaemonOptions,
} from "./serve_daemon.ts";
