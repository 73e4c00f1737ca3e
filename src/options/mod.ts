/**
 * Options objects: defaults that an explicit `undefined` cannot erase.
 * @module
 */
export { type Defaulted, withDefaults } from "./with_defaults.ts";
