/**
 * The shape of the house, as issue 36 set it: no import cycles, small
 * files, functions and lines. A failure names the module and what to change.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import ts from 'typescript-5';
import { readSourceFiles, roomOf, type SourceFile } from '../support/source-files.ts';

const maxFileLines = 250;
const maxFunctionLines = 40;
const maxLineLength = 160;
const files = readSourceFiles();

it('no production module imports itself back through others (type imports included)', () => {
  assert.deepEqual(findCycles(files), []);
});

it(`no production file is over ${maxFileLines} lines`, () => {
  const long = files.filter((file) => lineCount(file.text) > maxFileLines).map((file) => `${file.path}: ${lineCount(file.text)} lines`);
  assert.deepEqual(long, []);
});

it(`no production function is over ${maxFunctionLines} lines`, () => {
  assert.deepEqual(files.flatMap(longFunctions), []);
});

it(`no production line is over ${maxLineLength} characters`, () => {
  const long = files.flatMap((file) =>
    file.text.split('\n').flatMap((line, index) => (line.length > maxLineLength ? [`${file.path}:${index + 1} (${line.length})`] : [])),
  );
  assert.deepEqual(long, []);
});

/**
 * The relay's insides are its own: other rooms use the discovery wire format and the consumer
 * contracts in src/discovery/. Besides xds/ itself, only runtime/ (which starts the relay and
 * checks its upstream's files before anything starts) imports xds/.
 */
it('only xds/ itself and runtime/ import xds/', () => {
  const reaching = files.filter((file) => !['xds', 'runtime'].includes(roomOf(file.path)));
  const found = reaching.flatMap((file) => file.imports.filter((path) => roomOf(path) === 'xds').map((path) => `${file.path} → ${path}`));
  assert.deepEqual(found, []);
});

function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** Functions (any kind) whose body spans more lines than allowed, as `path:line name (N lines)`. */
function longFunctions(file: SourceFile): string[] {
  const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1;
  const long: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const body = node.body as ts.Node;
      const lines = lineOf(body.end) - lineOf(body.getStart(source)) + 1;
      if (lines > maxFunctionLines) long.push(`${file.path}:${lineOf(body.getStart(source))} ${functionName(node, source)} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return long;
}

function functionName(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  return ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(source) : '(anonymous)';
}

/** Each import cycle once, as the modules on it joined by ` → `. */
function findCycles(modules: readonly SourceFile[]): string[] {
  const graph = new Map(modules.map((module) => [module.path, module.imports]));
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const walk = (path: string, trail: string[]): void => {
    if (state.get(path) === 'done') return;
    if (state.get(path) === 'open') return void cycles.push([...trail.slice(trail.indexOf(path)), path].join(' → '));
    state.set(path, 'open');
    for (const next of graph.get(path) ?? []) walk(next, [...trail, path]);
    state.set(path, 'done');
  };
  for (const path of graph.keys()) walk(path, []);
  return cycles;
}
