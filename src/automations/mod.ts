/**
 * Automations: named workflows and dispatches on cron schedules, from the configuration file and
 * the API; the daemon's scheduler fires them.
 * @module
 */
export { Automations, type AutomationView, configuredAutomations } from "./automations.ts";
export { latestSlot, nextSlot, shortestGapMs } from "./cron.ts";
