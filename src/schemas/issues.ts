/** The part of a zod error the messages need. */
interface IssueList {
  issues: Array<{ path: PropertyKey[]; message: string; code: string; keys?: string[] }>;
}

/** Longest field name a message repeats: names come from hostile request bodies. */
const NAME_LIMIT = 64;

/** A field name as a message shows it: control characters escaped, clipped. */
function shownName(name: string): string {
  const escaped = JSON.stringify(name).slice(1, -1);
  return escaped.length > NAME_LIMIT ? `${escaped.slice(0, NAME_LIMIT)}...` : escaped;
}

/** The first problem of a failed parse in words: `'field' what is wrong`, or the unknown fields. */
export function describeIssue(error: IssueList): string {
  const issue = error.issues[0];
  if (!issue) return "invalid request";
  if (issue.code === "unrecognized_keys" && issue.keys) {
    return `unknown field ${issue.keys.slice(0, 5).map((k) => `'${shownName(k)}'`).join(", ")}`;
  }
  const field = issue.path.map((part) => shownName(String(part))).join(".");
  return field
    ? `'${field}' ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`
    : issue.message;
}
