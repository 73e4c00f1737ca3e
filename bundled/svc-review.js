export const meta = {
  name: "svc-review",
  description:
    "Reviews the changed files of a git diff, one agent per file, and gathers their findings.",
  phases: ["review"],
};

// args: { base, diff_files: [{ path, patch, truncated? }] }, made by svc's review service.
const files = Array.isArray(args?.diff_files) ? args.diff_files : [];
if (files.length === 0) {
  log("no changed files: nothing to review");
  return { findings: [], files: 0, failed: 0 };
}

const schema = {
  type: "object",
  properties: {
    findings: {
      type: "array",
      items: {
        type: "object",
        properties: {
          line: { type: "integer", minimum: 1 },
          severity: { enum: ["info", "warning", "error"] },
          message: { type: "string", minLength: 1 },
        },
        required: ["severity", "message"],
        additionalProperties: false,
      },
    },
  },
  required: ["findings"],
  additionalProperties: false,
};

function prompt(file) {
  return [
    `Review this change to the file ${JSON.stringify(file.path)} against ${args.base}.`,
    "Report bugs, risks and mistakes the change introduces; say nothing about what is fine.",
    "Give each finding a severity (error: wrong or unsafe; warning: likely a problem;",
    "info: worth a look), the line of the new file it is about when there is one, and a",
    "message of one or two sentences. No findings: an empty list.",
    file.truncated ? "The diff below was cut short: review what it shows." : "",
    "",
    "```diff",
    file.patch,
    "```",
  ].join("\n");
}

phase("review");
const answers = await parallel(
  files.map((file) => () =>
    agent(prompt(file), { label: `review ${file.path}`, phase: "review", schema })
  ),
);

const findings = [];
answers.forEach((answer, i) => {
  for (const finding of answer?.findings ?? []) {
    findings.push({ path: files[i].path, ...finding });
  }
});
const failed = answers.filter((answer) => answer === null).length;
if (failed > 0) log(`${failed} of ${files.length} files could not be reviewed`);
return { findings, files: files.length, failed };
