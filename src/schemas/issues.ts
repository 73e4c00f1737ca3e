/** The part of a zod error the messages need. */
interface IssueList {
  issues: Array<{ path: PropertyKey[]; message: string; code: string; keys?: string[] }>;
}

/** The first problem of a failed parse in words: `'field' what is wrong`, or the unknown fields. */
export function describeIssue(error: IssueList): string {
  const issue = error.issues[0];
  if (!issue) return "invalid request";
  if (issue.code === "unrecognized_keys" && issue.keys) {
    return `unknown field ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
  }
  const field = issue.path.map(String).join(".");
  return field
    ? `'${field}' ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`
    : issue.message;
}
