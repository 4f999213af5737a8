// The descriptions of the settings are the JSDoc comments on the keys of src/config/schema.ts and
// of its sections (src/config/schema/): that is where developers write them (and where a merge of
// two new keys is two independent lines), so the reference reads them with the TypeScript
// compiler instead of asking for a second copy in zod's .describe().
import { readFileSync } from 'node:fs';
import ts from 'typescript';

/** The comments of one object literal handed to z.object / z.strictObject / z.looseObject. */
export interface ObjectLiteralDocs {
  /** Its keys, in source order (used to match it with the runtime schema). */
  keys: string[];
  /** Key → its description: its own comment, else the comment of the schema constant it names. */
  descriptions: Map<string, string>;
}

const OBJECT_FACTORIES = new Set(['object', 'strictObject', 'looseObject']);

/** The comments of every object literal of the schema files; a key naming a constant of another of them finds its comment too. */
export function readSchemaDocs(schemaFiles: readonly string[]): ObjectLiteralDocs[] {
  const constantDocs = new Map<string, string>();
  const literals: ts.ObjectLiteralExpression[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isVariableStatement(node)) {
      const doc = docOf(node);
      for (const declaration of node.declarationList.declarations) {
        if (doc !== undefined && ts.isIdentifier(declaration.name)) constantDocs.set(declaration.name.text, doc);
      }
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && OBJECT_FACTORIES.has(node.expression.name.text)) {
      const first = node.arguments[0];
      if (first !== undefined && ts.isObjectLiteralExpression(first)) literals.push(first);
    }
    ts.forEachChild(node, visit);
  };
  for (const schemaFile of schemaFiles) visit(ts.createSourceFile(schemaFile, readFileSync(schemaFile, 'utf8'), ts.ScriptTarget.ES2022, true));
  return literals.map((literal) => {
    const keys: string[] = [];
    const descriptions = new Map<string, string>();
    for (const property of literal.properties) {
      if (!ts.isPropertyAssignment(property) || !(ts.isIdentifier(property.name) || ts.isStringLiteral(property.name))) continue;
      const key = property.name.text;
      keys.push(key);
      const named = rootIdentifier(property.initializer);
      const doc = docOf(property) ?? (named === undefined ? undefined : constantDocs.get(named));
      if (doc !== undefined) descriptions.set(key, doc);
    }
    return { keys, descriptions };
  });
}

/** The text of the JSDoc comment right before a node, on one line. */
function docOf(node: ts.Node): string | undefined {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const last = docs.at(-1);
  if (last === undefined) return undefined;
  const text = ts.getTextOfJSDocComment(last.comment)?.replace(/\s+/g, ' ').trim();
  return text === undefined || text === '' ? undefined : text;
}

/** `authSchema.default(…)` → "authSchema"; `z.coerce.number()…` → "z". */
function rootIdentifier(expression: ts.Expression): string | undefined {
  let node: ts.Expression = expression;
  for (;;) {
    if (ts.isIdentifier(node)) return node.text;
    if (ts.isCallExpression(node) || ts.isPropertyAccessExpression(node) || ts.isNonNullExpression(node) || ts.isParenthesizedExpression(node)) {
      node = node.expression;
      continue;
    }
    return undefined;
  }
}
