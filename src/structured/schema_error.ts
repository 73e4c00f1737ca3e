/** Why a schema could not be used: a bug in the script, surfaced as a TypeError. */
export class SchemaError extends Error {}
