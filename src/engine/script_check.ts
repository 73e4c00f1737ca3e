import { parse } from "acorn";
import type { Node } from "acorn";
import { z } from "zod";
import { SvcError } from "../errors/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";

/** The script's `export const meta = {...}`. */
export const ScriptMetaSchema = z.strictObject({
  name: z.string().min(1).optional(),
  description: z.string().optional(),
  phases: z.array(z.string()).optional(),
});

/** Validated script metadata. */
export type ScriptMeta = z.infer<typeof ScriptMetaSchema>;

/** A script that passed the host-side check, ready to hand to a guest. */
export interface CheckedScript {
  meta: ScriptMeta;
  /** The body to evaluate: the source with `export` of meta blanked out, offsets unchanged. */
  body: string;
}

type AnyNode = Node & Record<string, unknown>;

function fail(
  filename: string,
  node: { loc?: { start: { line: number; column: number } } | null },
  message: string,
): never {
  const at = node.loc ? `${node.loc.start.line}:${node.loc.start.column + 1}` : "1:1";
  throw new SvcError("invalid_script", `${filename}:${at}: ${message}`);
}

/** Turns the meta literal into a JSON value, refusing anything that is not a pure literal. */
function literalValue(node: AnyNode, filename: string): JsonValue {
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
      return (node.elements as Array<AnyNode | null>).map((element) => {
        if (element === null) {
          fail(filename, node, "meta must be a pure literal: array holes are not allowed");
        }
        if (element.type === "SpreadElement") {
          fail(filename, element, "meta must be a pure literal: spread is not allowed");
        }
        return literalValue(element, filename);
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
        out[name] = literalValue(property.value as AnyNode, filename);
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
    const value = literalValue(init, filename);
    const parsed = ScriptMetaSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.length > 0 ? `meta.${issue.path.join(".")}` : "meta";
      const detail = issue.code === "unrecognized_keys"
        ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${
          issue.keys.map((k) => `'${k}'`).join(", ")
        } (allowed: name, description, phases)`
        : issue.message;
      fail(filename, init, `${field}: ${detail}`);
    }
    meta = parsed.data;
    // Blank the keyword, keep every offset: error positions stay those of the file.
    const start = statement.start as number;
    body = source.slice(0, start) + "      " + source.slice(start + "export".length);
  });
  findForbidden(program, filename);
  return { meta, body };
}
