export const meta = {
  name: "review-fanout",
  description: "Reviews a few files in parallel, then summarises the findings in a pipeline.",
  phases: ["review", "summarise"],
};

const files = args?.files ??
  ["src/engine/run_manager.ts", "src/engine/guest_session.ts", "guest/bootstrap.js"];

phase("review");
const reviews = await parallel(
  files.map((file) => () =>
    agent(`Review ${file} for bugs. Answer in one paragraph.`, { label: file })
  ),
);
log(`${reviews.filter((r) => r !== null).length} of ${files.length} reviews came back`);

phase("summarise");
const verdicts = await pipeline(
  files,
  (_prev, file, i) =>
    agent(`Summarise this review of ${file}: ${reviews[i]}`, { label: `summary ${file}` }),
  (summary, file) =>
    agent(`Rate the severity of: ${summary}`, {
      label: `severity ${file}`,
      schema: {
        type: "object",
        properties: { severity: { enum: ["low", "medium", "high"] }, reason: { type: "string" } },
        required: ["severity", "reason"],
      },
    }),
);

return { files, verdicts };
