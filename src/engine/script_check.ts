import { parse, parseExpressionAt, tokenizer } from "acorn";
import type { Node } from "acorn";
import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import type { Assert, JsonValue, SameType } from "../schemas/mod.ts";

/** A phase of `meta.phases`: a title, or Claude Code's `{ title, detail?, model? }`. */
export const MetaPhaseSchema = z.union([
  z.string(),
  z.looseObject({
    title: z.string(),
    detail: z.string().optional(),
    model: z.string().optional(),
  }),
]);

/**
 * The script's `export const meta = {...}`: the fields of Claude Code's workflow scripts.
 * Fields svc does not know are kept (and warned about by {@linkcode checkScript}), never refused:
 * a script written for a newer Claude Code still runs.
 */
export const ScriptMetaSchema = z.looseObject({
  name: z.string().min(1).optional(),
  description: z.string().optional(),
  whenToUse: z.string().optional(),
  phases: z.array(MetaPhaseSchema).optional(),
});

/** A phase of `meta.phases` in Claude Code's object form. */
export interface MetaPhase {
  /** The phase's title, as narrated. */
  title: string;
  /** A longer description (accepted, not used). */
  detail?: string;
  /** The model Claude Code would use for it (accepted, not used). */
  model?: string;
  /** Fields svc does not know, kept as written. */
  [field: string]: unknown;
}

/**
 * Validated script metadata, the script's `export const meta`: the fields of Claude Code's
 * workflow scripts, unknown ones kept as written.
 */
export interface ScriptMeta {
  /** The workflow's name. */
  name?: string;
  /** What the workflow does. */
  description?: string;
  /** When a person or an agent should pick this workflow. */
  whenToUse?: string;
  /** The workflow's phases: titles, or `{ title, detail?, model? }` objects. */
  phases?: Array<string | MetaPhase>;
  /** Fields svc does not know, kept as written. */
  [field: string]: unknown;
}
type _ScriptMetaMatches = Assert<SameType<ScriptMeta, z.infer<typeof ScriptMetaSchema>>>;

/** The fields of meta, and of a phase object, that svc knows. */
const META_FIELDS = ["name", "description", "whenToUse", "phases", "maxAgents", "concurrency"];
const PHASE_FIELDS = ["title", "detail", "model"];
/** Warnings kept per script; the rest are counted in the last one. */
const MAX_WARNINGS = 10;

/** A script that passed the host-side check, ready to hand to a guest. */
export interface CheckedScript {
  /** The script's validated `meta` (empty when it exports none). */
  meta: ScriptMeta;
  /** The body to evaluate: the source with `export` of meta blanked out, offsets unchanged. */
  body: string;
  /**
   * What the check accepted but a person should know (unknown meta fields): one line each,
   * `file:line:col: ...`, with names quoted and clipped, at most ten and a count.
   */
  warnings: string[];
}

/** The titles of `meta.phases`, whichever form each entry has. */
export function phaseTitles(meta: ScriptMeta): string[] | undefined {
  return meta.phases?.map((phase) => typeof phase === "string" ? phase : phase.title);
}

type AnyNode = Node & Record<string, unknown>;
type Loc = { loc?: { start: { line: number; column: number } } | null };

/** Where each field of the meta literal was written, by its path (`phases.1.title`). */
type Positions = Map<string, Loc>;

function at(node: Loc): string {
  return node.loc ? `${node.loc.start.line}:${node.loc.start.column + 1}` : "1:1";
}

/** A field name for a message: JSON-quoted (control characters show escaped) and clipped. */
function fieldName(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

function fail(
  filename: string,
  node: { loc?: { start: { line: number; column: number } } | null },
  message: string,
): never {
  throw new SvcError("invalid_script", `${filename}:${at(node)}: ${message}`);
}

/** Turns the meta literal into a JSON value, refusing anything that is not a pure literal. */
function literalValue(
  node: AnyNode,
  filename: string,
  where: { positions: Positions; path: string[] },
): JsonValue {
  switch (node.type) {
    case "Literal": {
      if ("regex" in node && node.regex) {
        fail(filename, node, "meta must be a pure literal: regular expressions are not allowed");
      }
      if ("bigint" in node && node.bigint) {
        fail(filename, node, "meta must be a pure literal: BigInt is not allowed");
      }
      return node.value as JsonValue;
    }
    case "TemplateLiteral": {
      const expressions = node.expressions as AnyNode[];
      if (expressions.length > 0) {
        fail(
          filename,
          expressions[0]!,
          "meta must be a pure literal: template interpolation is not allowed",
        );
      }
      const quasis = node.quasis as Array<{ value: { cooked: string } }>;
      return quasis[0]?.value.cooked ?? "";
    }
    case "UnaryExpression": {
      const argument = node.argument as AnyNode;
      if (
        node.operator === "-" && argument.type === "Literal" && typeof argument.value === "number"
      ) {
        return -argument.value;
      }
      return fail(
        filename,
        node,
        `meta must be a pure literal: operator '${String(node.operator)}' is not allowed`,
      );
    }
    case "ArrayExpression": {
      return (node.elements as Array<AnyNode | null>).map((element, index) => {
        if (element === null) {
          fail(filename, node, "meta must be a pure literal: array holes are not allowed");
        }
        if (element.type === "SpreadElement") {
          fail(filename, element, "meta must be a pure literal: spread is not allowed");
        }
        const path = [...where.path, String(index)];
        where.positions.set(path.join("."), element);
        return literalValue(element, filename, { positions: where.positions, path });
      });
    }
    case "ObjectExpression": {
      const out: { [key: string]: JsonValue } = {};
      for (const property of node.properties as AnyNode[]) {
        if (property.type === "SpreadElement") {
          fail(filename, property, "meta must be a pure literal: spread is not allowed");
        }
        if (property.computed) {
          fail(filename, property, "meta must be a pure literal: computed keys are not allowed");
        }
        if (property.kind !== "init" || property.method || property.shorthand) {
          fail(
            filename,
            property,
            "meta must be a pure literal: methods, accessors and shorthand properties are not allowed",
          );
        }
        const key = property.key as AnyNode;
        const name = key.type === "Identifier" ? String(key.name) : String(key.value);
        const path = [...where.path, name];
        where.positions.set(path.join("."), property);
        out[name] = literalValue(property.value as AnyNode, filename, {
          positions: where.positions,
          path,
        });
      }
      return out;
    }
    case "Identifier":
      return fail(
        filename,
        node,
        `meta must be a pure literal: variable '${String(node.name)}' is not allowed`,
      );
    case "CallExpression":
    case "NewExpression":
      return fail(filename, node, "meta must be a pure literal: calls are not allowed");
    default:
      return fail(filename, node, `meta must be a pure literal: ${node.type} is not allowed`);
  }
}

/** Finds `import(...)`, `import.meta` and `require(...)` anywhere in the tree. */
function findForbidden(root: AnyNode, filename: string): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) {
      stack.push(...value);
      continue;
    }
    if (
      value === null || typeof value !== "object" || typeof (value as AnyNode).type !== "string"
    ) continue;
    const node = value as AnyNode;
    if (node.type === "ImportExpression") {
      fail(
        filename,
        node,
        "import() is not allowed: workflow scripts reach the outside only through agent()",
      );
    }
    if (node.type === "MetaProperty" && (node.meta as AnyNode).name === "import") {
      fail(filename, node, "import.meta is not allowed in workflow scripts");
    }
    if (node.type === "CallExpression") {
      const callee = node.callee as AnyNode;
      if (callee.type === "Identifier" && callee.name === "require") {
        fail(
          filename,
          node,
          "require() is not allowed: workflow scripts reach the outside only through agent()",
        );
      }
    }
    for (const key in node) {
      if (key !== "loc" && key !== "start" && key !== "end") stack.push(node[key]);
    }
  }
}

/** A zod issue of meta in the words of a script author. */
function describeMetaIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_union" && issue.path.length === 2 && issue.path[0] === "phases") {
    return "must be a title, or an object { title, detail?, model? } with string values";
  }
  return issue.message;
}

/**
 * One warning per field svc does not know, in meta and in its phase objects, at the field's
 * position. The fields stay in meta: Claude Code may know them, and a refusal would stop a
 * script that runs there.
 */
function unknownFields(meta: ScriptMeta, positions: Positions, filename: string): string[] {
  const found: Array<{ path: string; name: string }> = [];
  for (const key of Object.keys(meta)) {
    if (!META_FIELDS.includes(key)) found.push({ path: key, name: key });
  }
  meta.phases?.forEach((phase, index) => {
    if (typeof phase === "string") return;
    for (const key of Object.keys(phase)) {
      if (!PHASE_FIELDS.includes(key)) {
        found.push({ path: `phases.${index}.${key}`, name: `phases[${index}].${key}` });
      }
    }
  });
  const warnings = found.slice(0, MAX_WARNINGS).map(({ path, name }) => {
    const node = positions.get(path) ?? {};
    const [head, ...rest] = name.split(".");
    const shown = rest.length > 0 ? `${head}.${fieldName(rest.join("."))}` : fieldName(name);
    return `${filename}:${at(node)}: meta field ${shown} is not known to svc: kept, not used`;
  });
  if (found.length > MAX_WARNINGS) {
    warnings.push(`${filename}: ${found.length - MAX_WARNINGS} more unknown meta fields`);
  }
  return warnings;
}

const TYPESCRIPT_HINT =
  /(^|[\s(,])(interface|type|enum|declare|namespace)\s+[A-Za-z_$]|:\s*(string|number|boolean|any|unknown|void|never)\b|\bas\s+(const|string|number|any|unknown)\b|<[A-Z][A-Za-z]*>\s*\(/m;

/**
 * Checks a workflow script on the host, before any process starts: it must parse as
 * JavaScript, may begin with `export const meta = {...}` (a pure literal), and must not
 * import, require or export anything else.
 */
export function checkScript(source: string, options: { filename?: string } = {}): CheckedScript {
  const filename = options.filename ?? "script.js";
  let program: AnyNode;
  try {
    program = parse(source, {
      ecmaVersion: "latest",
      sourceType: "module",
      allowReturnOutsideFunction: true,
      allowAwaitOutsideFunction: true,
      locations: true,
    }) as unknown as AnyNode;
  } catch (error) {
    const loc = (error as { loc?: { line: number; column: number } }).loc;
    const reason = error instanceof Error
      ? error.message.replace(/ \(\d+:\d+\)$/, "")
      : "syntax error";
    const hint = TYPESCRIPT_HINT.test(source)
      ? " (workflow scripts are plain JavaScript: TypeScript syntax such as type annotations is not supported)"
      : "";
    const at = loc ? `${loc.line}:${loc.column + 1}` : "1:1";
    throw new SvcError("invalid_script", `${filename}:${at}: syntax error: ${reason}${hint}`);
  }

  const statements = program.body as AnyNode[];
  let meta: ScriptMeta = {};
  let warnings: string[] = [];
  let body = source;
  statements.forEach((statement, index) => {
    if (statement.type === "ImportDeclaration") {
      fail(
        filename,
        statement,
        "import declarations are not allowed: workflow scripts reach the outside only through agent()",
      );
    }
    if (
      statement.type === "ExportDefaultDeclaration" || statement.type === "ExportAllDeclaration"
    ) {
      fail(filename, statement, "only 'export const meta = {...}' may be exported");
    }
    if (statement.type !== "ExportNamedDeclaration") return;
    const declaration = statement.declaration as AnyNode | null;
    const declarators = declaration?.type === "VariableDeclaration"
      ? (declaration.declarations as AnyNode[])
      : [];
    const isMeta = declaration?.type === "VariableDeclaration" && declaration.kind === "const" &&
      declarators.length === 1 && (declarators[0]!.id as AnyNode).type === "Identifier" &&
      (declarators[0]!.id as AnyNode).name === "meta";
    if (!isMeta) fail(filename, statement, "only 'export const meta = {...}' may be exported");
    if (index !== 0) {
      fail(filename, statement, "'export const meta' must be the first statement of the script");
    }
    const init = declarators[0]!.init as AnyNode | null;
    if (!init || init.type !== "ObjectExpression") {
      fail(filename, init ?? statement, "meta must be an object literal");
    }
    const positions: Positions = new Map();
    const value = literalValue(init, filename, { positions, path: [] });
    const parsed = ScriptMetaSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = issue.path.map(String);
      const field = path.length > 0 ? `meta.${path.join(".")}` : "meta";
      // The deepest part of the path that was written: the field itself, else its parent.
      let node: Loc = init;
      for (let n = path.length; n > 0; n--) {
        const found = positions.get(path.slice(0, n).join("."));
        if (found) {
          node = found;
          break;
        }
      }
      fail(filename, node, `${field}: ${describeMetaIssue(issue)}`);
    }
    warnings = unknownFields(parsed.data, positions, filename);
    meta = parsed.data;
    // Blank the keyword, keep every offset: error positions stay those of the file.
    const start = statement.start as number;
    body = source.slice(0, start) + "      " + source.slice(start + "export".length);
  });
  findForbidden(program, filename);
  return { meta, body, warnings };
}

/**
 * The `meta.name` of a script, read without parsing the rest of it: the script's first
 * statement must be `export const meta = {...}` (comments before it are fine), and only that
 * literal is parsed. Undefined when the script has no such meta, its meta is not a pure
 * literal, or it names no name. Nothing is evaluated: looking a workflow up by name reads the
 * meta of every file of a folder, which must cost little and run nothing.
 */
export function metaNameOf(source: string): string | undefined {
  const expected = ["export", "const", "meta", "="];
  try {
    const tokens = tokenizer(source, { ecmaVersion: "latest", sourceType: "module" });
    for (const word of expected) {
      const token = tokens.getToken();
      const text = source.slice(token.start, token.end);
      if (text !== word) return undefined;
    }
    const open = tokens.getToken();
    if (open.type.label !== "{") return undefined;
    const node = parseExpressionAt(source, open.start, {
      ecmaVersion: "latest",
      sourceType: "module",
    });
    const value = literalValue(node as unknown as AnyNode, "meta", {
      positions: new Map(),
      path: [],
    });
    const parsed = ScriptMetaSchema.safeParse(value);
    return parsed.success ? parsed.data.name : undefined;
  } catch {
    return undefined;
  }
}
