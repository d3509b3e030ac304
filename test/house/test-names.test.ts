/**
 * End-to-end test names, as issue 36 set them: each names one behaviour.
 * Two behaviours joined by ";" are two tests (a describe whose `before`
 * does the shared set-up, and one `it` per behaviour).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import ts from 'typescript-5';
import { repoRoot } from '../support/paths.ts';

const e2eDir = join(repoRoot, 'test', 'e2e');
const namingCalls = new Set(['it', 'test', 'describe', 'suite']);

it('no e2e test or describe name joins two behaviours with ";"', () => {
  const files = readdirSync(e2eDir).filter((name) => name.endsWith('.test.ts')).sort();
  assert.ok(files.length > 0, `no tests found in ${e2eDir}`);
  const joined = files.flatMap((name) => namesWithSemicolon(`test/e2e/${name}`, readFileSync(join(e2eDir, name), 'utf8')));
  assert.deepEqual(joined, []);
});

it('finds a ";" in a quoted, double-quoted or template name, but not in other strings', () => {
  const text = [
    "it('a; b', () => {});",
    'describe("c; d", () => {});',
    'it.skip(`e ${1}; f`, () => {});',
    "it('no semicolon', () => assert.equal(line, 'x; y'));",
    "run('not; a test');",
  ].join('\n');
  assert.deepEqual(namesWithSemicolon('example.test.ts', text), [
    'example.test.ts:1 "a; b"',
    'example.test.ts:2 "c; d"',
    'example.test.ts:3 "e ${…}; f"',
  ]);
});

/** `path:line "name"` for each it/test/describe (also `.skip`, `.only`, `.todo`) whose literal name has a ";". */
function namesWithSemicolon(path: string, text: string): string[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && namingCalls.has(calleeName(node.expression))) {
      const name = literalText(node.arguments[0]);
      if (name?.includes(';')) found.push(`${path}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1} ${JSON.stringify(name)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `it` for `it(...)`, `it.skip(...)` and `it.only(...)`; '' for anything else. */
function calleeName(callee: ts.Expression): string {
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)) return callee.expression.text;
  return '';
}

/** A string or template literal's text, substitutions shown as `${…}`; undefined for names computed otherwise. */
function literalText(node: ts.Node | undefined): string | undefined {
  if (node === undefined) return undefined;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) return node.head.text + node.templateSpans.map((span) => '${…}' + span.literal.text).join('');
  return undefined;
}
