/** A JSON value, as scripts, clients and the host exchange them. */
export type JsonValue = null | boolean | number | string | JsonValue[] | {
  [key: string]: JsonValue;
};
