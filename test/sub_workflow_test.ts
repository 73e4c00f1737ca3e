import assert from "node:assert/strict";
import { findWorkflow, MAX_SCANNED_BYTES, MAX_SCANNED_FILES } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { LOCAL, narration, tempDir, testManager } from "./helpers.ts";

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.replace(/\/[^/]+$/, ""), { recursive: true });
  await Deno.writeTextFile(path, text);
}

const SUMMARISE = `export const meta = { name: "summarise" };
phase("summarise " + args.topic);
const parts = await parallel(args.items.map((item) => () => agent("summarise " + item)));
return { topic: args.topic, parts };
`;

Deno.test("workflow(name) runs workflows/<name>.js of the project, sharing the parent's journal", async () => {
  await using t = await testManager();
  await write(`${t.home}/workflows/summarise.js`, SUMMARISE);
  const run = await t.manager.start({
    script: `const first = await agent("before");
      const sub = await workflow("summarise", { topic: "t", items: ["a", "b"] });
      return { first, sub, after: await agent("after") };`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, {
    first: "fake response to: before",
    sub: { topic: "t", parts: ["fake response to: summarise a", "fake response to: summarise b"] },
    after: "fake response to: after",
  });
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.seq), [1, 2, 3, 4], "one journal, one sequence");
  // As in Claude Code: the sub-workflow's start and end in the log, its phase() regrouping nothing.
  assert.deepEqual(status.narration.map((e) => e.text), [
    "▸ running dynamic workflow summarise",
    "▸ summarise done",
  ]);
});

Deno.test("named workflows are looked up in the project first, then in SVC_HOME", async () => {
  await using t = await testManager({ projectDir: undefined });
  const project = `${t.home}/project`;
  await write(`${project}/workflows/which.js`, `return "project";`);
  await write(`${t.home}/workflows/which.js`, `return "home";`);
  await write(`${t.home}/workflows/home_only.js`, `return "home only";`);
  const run = await t.manager.start({
    script: `return [await workflow("which"), await workflow("home_only")];`,
    workdir: project,
  }, LOCAL);
  assert.deepEqual((await t.manager.wait(run.run_id, LOCAL)).result, ["project", "home only"]);
});

Deno.test("workflow(ref) runs a script by relative path inside the project", async () => {
  await using t = await testManager();
  await write(`${t.home}/lib/double.js`, `return args * 2;`);
  const run = await t.manager.start(
    { script: `return await workflow("./lib/double.js", 21);` },
    LOCAL,
  );
  assert.deepEqual((await t.manager.wait(run.run_id, LOCAL)).result, 42);
});

Deno.test("a sub-workflow shares the parent's agent limit", async () => {
  await using t = await testManager({ maxAgents: 10 });
  await write(
    `${t.home}/workflows/six.js`,
    `return (await parallel(Array.from({ length: 6 }, (_, i) => () => agent("sub " + i)))).filter(Boolean).length;`,
  );
  const run = await t.manager.start({
    script:
      `const mine = (await parallel(Array.from({ length: 6 }, (_, i) => () => agent("own " + i)))).filter(Boolean).length;
      return { mine, sub: await workflow("six") };`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, { mine: 6, sub: 4 });
  assert.equal(status.conditions[0]?.type, "AgentLimitExceeded");
});

Deno.test("workflow() inside a sub-workflow is an error: one level only", async () => {
  await using t = await testManager();
  await write(`${t.home}/workflows/inner.js`, `return 1;`);
  await write(`${t.home}/workflows/outer.js`, `return await workflow("inner");`);
  const run = await t.manager.start({
    script: `try { return await workflow("outer"); } catch (e) { return e.message; }`,
  }, LOCAL);
  assert.equal(
    (await t.manager.wait(run.run_id, LOCAL)).result,
    "workflow() cannot be called inside a sub-workflow: workflows nest one level only",
  );
});

Deno.test("an unknown name, a bad ref or a syntax error fails that call with a clear error", async () => {
  await using t = await testManager();
  await write(`${t.home}/workflows/broken.js`, `const a = 1;\nreturn a +;\n`);
  await write(`${t.home}/workflows/imports.js`, `import fs from "node:fs";\nreturn 1;`);
  const run = await t.manager.start({
    script: `const seen = [];
      for (const ref of ["missing", "broken", "imports", "../outside.js", "/etc/passwd", "./not-js.txt", ""]) {
        try { await workflow(ref); seen.push("ran"); } catch (e) { seen.push(e.name + ": " + e.message); }
      }
      return seen;`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  const seen = status.result as string[];
  // Folders are named by role: the script learns nothing of where the host keeps them.
  assert.equal(
    seen[0]!,
    "Error: workflow(): no workflow 'missing' (looked for meta.name 'missing' and missing.js in the project's .claude/workflows/ folder, the project's workflows/ folder, the user's .claude/workflows/ folder and svc's saved workflows)",
  );
  assert.match(seen[1]!, /^Error: broken\.js:2:11: syntax error: Unexpected token$/);
  assert.match(seen[2]!, /^Error: imports\.js:1:1: import declarations are not allowed/);
  assert.match(
    seen[3]!,
    /^Error: workflow\(\): '\.\.\/outside\.js' must be a path to a \.js file inside the project directory$/,
  );
  assert.match(seen[4]!, /^Error: workflow\(\): an absolute path is neither a workflow name/);
  assert.match(seen[5]!, /must be a path to a \.js file/);
  assert.match(
    seen[6]!,
    /^TypeError: workflow\(\): the name or ref must be a non-empty string or \{scriptPath\}, got string$/,
  );
});

Deno.test("a symbolic link cannot hand workflow() a file from outside the project or its workflows folder", async () => {
  await using outside = await tempDir();
  await write(`${outside.path}/secret.js`, `return "SECRET";`);
  await using t = await testManager({ projectDir: undefined });
  const project = `${t.home}/project`;
  await write(`${project}/lib/real.js`, `return "inside";`);
  await Deno.symlink(`${outside.path}/secret.js`, `${project}/lib/link.js`);
  await Deno.symlink(outside.path, `${project}/linked`);
  await Deno.symlink("./real.js", `${project}/lib/inside.js`);
  await Deno.mkdir(`${project}/workflows`);
  await Deno.symlink(`${outside.path}/secret.js`, `${project}/workflows/escape.js`);
  await Deno.symlink("../lib/real.js", `${project}/workflows/sideways.js`);
  await Deno.mkdir(`${t.home}/workflows`);
  await Deno.symlink(`${outside.path}/secret.js`, `${t.home}/workflows/home_escape.js`);
  const refs = [
    "./lib/link.js",
    "./linked/secret.js",
    "escape",
    "sideways",
    "home_escape",
    "./lib/inside.js",
  ];
  const run = await t.manager.start({
    script: `const seen = [];
      for (const ref of ${JSON.stringify(refs)}) {
        try { seen.push("ran: " + await workflow(ref)); } catch (e) { seen.push(e.message); }
      }
      return seen;`,
    workdir: project,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, [
    "workflow(): './lib/link.js' leads outside the project directory through a symbolic link",
    "workflow(): './linked/secret.js' leads outside the project directory through a symbolic link",
    "workflow(): 'escape' leads outside the project's workflows/ folder through a symbolic link",
    "workflow(): 'sideways' leads outside the project's workflows/ folder through a symbolic link",
    "workflow(): 'home_escape' leads outside svc's saved workflows through a symbolic link",
    "ran: inside",
  ]);
});

Deno.test("a project whose workflows folder is a link to elsewhere gives workflow(name) nothing from there", async () => {
  await using outside = await tempDir();
  await write(`${outside.path}/secret.js`, `return "SECRET";`);
  await using t = await testManager({ projectDir: undefined });
  const project = `${t.home}/project`;
  await Deno.mkdir(project);
  await Deno.symlink(outside.path, `${project}/workflows`);
  const run = await t.manager.start({
    script: `try { return await workflow("secret"); } catch (e) { return e.message; }`,
    workdir: project,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(
    status.result,
    "workflow(): 'secret' leads outside the project's workflows/ folder through a symbolic link",
  );
});

Deno.test("an error thrown inside a sub-workflow points at the sub-workflow's file and line", async () => {
  await using t = await testManager();
  await write(`${t.home}/workflows/fails.js`, `log("in sub");\nnull.boom;\n`);
  const run = await t.manager.start({ script: `await workflow("fails");` }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.match(
    status.error?.message ?? "",
    /^TypeError: Cannot read properties of null \(reading 'boom'\)/,
  );
  assert.match(status.error?.stack ?? "", /fails\.js:2:6/);
});

// ---------------------------------------------------------------------------------------------
// Claude Code's workflow() (issue 10): .claude/workflows, {scriptPath}, refs from the script's folder

Deno.test("workflow(name) looks in the project's .claude/workflows and workflows, then ~/.claude/workflows, then SVC_HOME", async () => {
  await using user = await tempDir("svc-user-");
  await using t = await testManager({ projectDir: undefined, userHome: user.path });
  const project = `${t.home}/project`;
  await write(`${project}/.claude/workflows/a.js`, `return "project .claude";`);
  await write(`${project}/workflows/a.js`, `return "project workflows";`);
  await write(`${project}/workflows/b.js`, `return "project workflows";`);
  await write(`${user.path}/.claude/workflows/b.js`, `return "user .claude";`);
  await write(`${user.path}/.claude/workflows/c.js`, `return "user .claude";`);
  await write(`${t.home}/workflows/c.js`, `return "SVC_HOME";`);
  await write(`${t.home}/workflows/d.js`, `return "SVC_HOME";`);
  const run = await t.manager.start({
    script:
      `return [await workflow("a"), await workflow("b"), await workflow("c"), await workflow("d")];`,
    workdir: project,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [
    "project .claude",
    "project workflows",
    "user .claude",
    "SVC_HOME",
  ]);
});

Deno.test("findWorkflow() gives the real path of a saved workflow, or names every place it looked by role, never by path", async () => {
  await using t = await tempDir();
  const places = {
    projectDir: `${t.path}/project`,
    home: `${t.path}/svc`,
    userHome: `${t.path}/user`,
  };
  await write(`${t.path}/user/.claude/workflows/review.js`, `return 1;`);
  assert.equal(
    await findWorkflow("review", places),
    await Deno.realPath(`${t.path}/user/.claude/workflows/review.js`),
  );
  await assert.rejects(
    findWorkflow("nothing", places),
    (error: unknown) =>
      error instanceof SvcError && error.code === "not_found" &&
      error.message ===
        "Cannot find workflow 'nothing': looked for meta.name 'nothing' and nothing.js in the project's .claude/workflows/ folder, the project's workflows/ folder, the user's .claude/workflows/ folder and svc's saved workflows",
  );
  await assert.rejects(findWorkflow("../x", places), /a name is letters, digits/);
});

Deno.test("workflow({scriptPath}) starts from the project's root and ./refs from the calling script's folder, both inside the project", async () => {
  await using user = await tempDir("svc-user-");
  await using t = await testManager({ projectDir: undefined, userHome: user.path });
  const project = `${t.home}/project`;
  await write(`${project}/.claude/workflows/helpers/double.js`, `return args * 2;`);
  await write(`${project}/lib/triple.js`, `return args * 3;`);
  await write(`${project}/.claude/workflows/main.js`, "// the main script's own file");
  await write(`${t.home}/outside.js`, `return "OUTSIDE";`);
  const real = await Deno.realPath(project);
  const run = await t.manager.start({
    script: `const seen = [];
      for (const ref of [
        { scriptPath: ".claude/workflows/helpers/double.js" },
        { scriptPath: "./lib/triple.js" },
        "./helpers/double.js",
        { scriptPath: ${JSON.stringify(`${real}/lib/triple.js`)} },
        { scriptPath: ${
      JSON.stringify(`${project}/.claude/workflows/helpers/../helpers/double.js`)
    } },
        { scriptPath: "helpers/double.js" },
        { scriptPath: "../outside.js" },
        { scriptPath: ${JSON.stringify(`${t.home}/outside.js`)} },
        { scriptPath: ${JSON.stringify(`${project}/../outside.js`)} },
        { scriptPath: "/etc/passwd.js" },
      ]) {
        try { seen.push(await workflow(ref, 7)); } catch (e) { seen.push(e.message); }
      }
      return seen;`,
    workdir: project,
    script_dir: `${project}/.claude/workflows`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const outside =
    "workflow(): an absolute path must be a path to a .js file inside the project directory";
  assert.deepEqual(status.result, [
    14,
    21,
    14,
    21,
    14,
    "workflow(): no workflow 'helpers/double.js' (looked for helpers/double.js in the project directory)",
    "workflow(): '../outside.js' must be a path to a .js file inside the project directory",
    outside,
    outside,
    outside,
  ]);
  // No refusal repeats a host path, not even the one the script gave.
  for (const text of status.result as unknown[]) {
    if (typeof text === "string") assert.ok(!text.includes(t.home), text);
  }
});

Deno.test("a script from a workflows folder outside the project reaches its neighbours there and nothing else", async () => {
  await using user = await tempDir("svc-user-");
  await using t = await testManager({ projectDir: undefined, userHome: user.path });
  const project = `${t.home}/project`;
  await Deno.mkdir(project, { recursive: true });
  const folder = `${user.path}/.claude/workflows`;
  await write(`${folder}/lib/step.js`, `return "neighbour";`);
  await write(`${user.path}/secret.js`, `return "SECRET";`);
  await Deno.symlink(`${user.path}/secret.js`, `${folder}/lib/link.js`);
  const run = await t.manager.start({
    script: `const seen = [];
      for (const ref of ["./lib/step.js", "../secret.js", "./lib/link.js"]) {
        try { seen.push(await workflow(ref)); } catch (e) { seen.push(e.message); }
      }
      return seen;`,
    workdir: project,
    script_dir: folder,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [
    "neighbour",
    "workflow(): '../secret.js' must be a path to a .js file inside the calling script's folder",
    "workflow(): './lib/link.js' leads outside the calling script's folder through a symbolic link",
  ]);
});

Deno.test("a run refuses a script_dir that is not an existing absolute directory", async () => {
  await using t = await testManager();
  await write(`${t.home}/file.js`, "return 1;");
  for (
    const [dir, pattern] of [
      ["relative/dir", /script_dir.*must be an absolute path/],
      [`${t.home}/missing`, /'script_dir' ".*\/missing" is not an existing directory/],
      [`${t.home}/file.js`, /is not an existing directory/],
    ] as const
  ) {
    await assert.rejects(
      t.manager.start({ script: "return 1", script_dir: dir }, LOCAL),
      (error: unknown) =>
        error instanceof SvcError && error.code === "invalid_request" &&
        pattern.test(error.message),
      dir,
    );
  }
});

Deno.test("a sub-workflow's unknown meta fields are narrated as warnings", async () => {
  await using t = await testManager();
  await write(
    `${t.home}/workflows/odd.js`,
    `export const meta = { name: "odd", tint: "blue" };\nreturn 1;`,
  );
  const run = await t.manager.start({ script: `return await workflow("odd");` }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, 1);
  assert.deepEqual(narration(status, "warning"), [
    `odd.js:1:36: meta field "tint" is not known to svc: kept, not used`,
  ]);
});

Deno.test("workflow({scriptPath}) with a scriptPath that is not a string throws a TypeError in the script", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script:
      `try { await workflow({ scriptPath: 3 }) } catch (e) { return e.name + ": " + e.message }`,
  }, LOCAL);
  assert.equal(
    (await t.manager.wait(run.run_id, LOCAL)).result,
    "TypeError: workflow(): scriptPath must be a non-empty string, got number",
  );
});

Deno.test("workflow(name) finds a saved workflow by its meta.name, folder by folder, the file name as a fallback", async () => {
  await using user = await tempDir("svc-user-");
  await using t = await testManager({ projectDir: undefined, userHome: user.path });
  const project = `${t.home}/project`;
  const claude = `${project}/.claude/workflows`;
  // Claude Code's rule: the name is meta.name, whatever the file is called.
  await write(
    `${claude}/validate-all.js`,
    `// checks\nexport const meta = { name: "validate" };\nreturn "by meta";`,
  );
  await write(`${claude}/validate.js`, `export const meta = { name: "other" };\nreturn "by file";`);
  await write(`${claude}/plain.js`, `return "no meta";`);
  // A later folder's meta.name does not shadow an earlier folder's file name.
  await write(
    `${user.path}/.claude/workflows/z.js`,
    `export const meta = { name: "plain" };\nreturn "user";`,
  );
  // A link out of the project is not read for its meta, and a meta that is no literal names nothing.
  await write(`${t.home}/elsewhere.js`, `export const meta = { name: "leak" };\nreturn "LEAKED";`);
  await Deno.symlink(`${t.home}/elsewhere.js`, `${claude}/link.js`);
  await write(
    `${claude}/computed.js`,
    `export const meta = { name: "comp" + "uted2" };\nreturn 0;`,
  );
  const run = await t.manager.start({
    script: `const seen = [];
      for (const name of ["validate", "other", "plain", "leak", "computed2"]) {
        try { seen.push(await workflow(name)); } catch (e) { seen.push(e.message.slice(0, 40)); }
      }
      return seen;`,
    workdir: project,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, [
    "by meta",
    "by file",
    "no meta",
    "workflow(): no workflow 'leak' (looked f",
    "workflow(): no workflow 'computed2' (loo",
  ]);
  assert.equal(
    await findWorkflow("validate", { projectDir: project, home: t.home }),
    await Deno.realPath(`${claude}/validate-all.js`),
  );
});

Deno.test("a meta.name lookup reads a bounded number of files of bounded size, and only their meta", async () => {
  await using t = await tempDir();
  const dir = `${t.path}/project/.claude/workflows`;
  const places = { projectDir: `${t.path}/project`, home: `${t.path}/svc` };
  await Deno.mkdir(dir, { recursive: true });
  for (let i = 0; i < MAX_SCANNED_FILES; i++) {
    await Deno.writeTextFile(`${dir}/a${String(i).padStart(4, "0")}.js`, "return 0;");
  }
  // Past the cap in name order: never read.
  await write(`${dir}/zz.js`, `export const meta = { name: "late" };\nreturn 1;`);
  await write(
    `${dir}/huge.js`,
    `export const meta = { name: "big" };\n//${"x".repeat(MAX_SCANNED_BYTES)}\nreturn 1;`,
  );
  // Only the literal is parsed: a body that would throw when run, or not even parse, is not run.
  await write(
    `${dir}/0parsed.js`,
    `export const meta = { name: "parsed" };\nthrow new Error("ran"); )(`,
  );
  await assert.rejects(findWorkflow("late", places), /Cannot find workflow 'late'/);
  await assert.rejects(findWorkflow("big", places), /Cannot find workflow 'big'/);
  assert.equal(await findWorkflow("parsed", places), await Deno.realPath(`${dir}/0parsed.js`));
  assert.equal(await findWorkflow("zz", places), await Deno.realPath(`${dir}/zz.js`));
});
