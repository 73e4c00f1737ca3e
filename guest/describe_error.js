// How the guest turns a thrown value into plain strings for the host. Reading a thrown value's
// fields may run the script's getters, which may throw: every read is guarded.
import { StringCtor } from "./primordials.js";

/** `{ name, message, stack }` of any thrown value; a non-error is named `Thrown`. */
export function describeError(error) {
  const report = { __proto__: null, name: "Error", message: "", stack: "" };
  try {
    if (error !== null && (typeof error === "object" || typeof error === "function")) {
      const { name, message, stack } = error;
      report.name = typeof name === "string" ? name : "Error";
      report.message = typeof message === "string" ? message : StringCtor(message);
      report.stack = typeof stack === "string" ? stack : "";
    } else {
      report.name = "Thrown";
      report.message = StringCtor(error);
    }
  } catch {
    report.message = "a value that cannot be described was thrown";
  }
  return report;
}
