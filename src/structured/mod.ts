/**
 * Structured output: JSON Schemas compiled under limits and values validated against them.
 *
 * A schema comes from a script or a caller, so every part of it is bounded: its size and depth,
 * its patterns (run by a linear-time engine), and the work one validation may do. The fake
 * provider also draws an instance of a schema from here.
 *
 * Layer: below dispatch (dispatch, tasks and the engine import it); it imports only the
 * platform, the shared schemas and the error table.
 * @module
 */
export {
  type CompiledSchema,
  PATTERN_LIMITS,
  SCHEMA_LIMITS,
  SchemaError,
  type SchemaFolder,
  SchemaRegistry,
  schemaRegistryFor,
  structuredValue,
  VALIDATION_LIMITS,
} from "./structured_output.ts";
export { SUBSCHEMA_KEYWORDS } from "./schema_limits.ts";
export { INSTANCE_LIMITS, schemaInstance } from "./schema_instance.ts";
