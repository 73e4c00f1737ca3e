/**
 * Concurrency primitives shared by the services.
 * @module
 */
export { type Release, Semaphore } from "./semaphore.ts";
export { abortableSleep } from "./sleep.ts";
export { type GaugeRelease, OwnerGauge } from "./owner_gauge.ts";
