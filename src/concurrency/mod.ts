/**
 * Concurrency primitives shared by the services.
 * @module
 */
export { type Release, Semaphore } from "./semaphore.ts";
export { abortableSleep } from "./sleep.ts";
