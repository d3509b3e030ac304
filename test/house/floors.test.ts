/**
 * The floors of the house, as issue 46 set them: no import cycle between
 * rooms (a room is a folder directly under src/), and `settings/`, which
 * every room reads, on the ground floor beside `shared/`: it imports only
 * `shared/`, node builtins and npm packages. The module scan in shape.test.ts
 * cannot see a cycle that runs through different files of the same rooms.
 * And `cli/` only parses and dispatches: its files stay small.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { readSourceFiles, roomOf, type SourceFile } from '../support/source-files.ts';

const files = readSourceFiles();
const maxCliFileLines = 150;

it('no import cycle between rooms (type imports included)', () => {
  const tangled = stronglyConnected(roomGraph(files)).filter((component) => component.length > 1);
  assert.deepEqual(tangled.map((component) => component.join(' ↔ ')), []);
});

it('settings/ imports only shared/ (and node builtins and npm packages)', () => {
  assert.deepEqual(importsBeyond('settings', ['settings', 'shared']), []);
});

it('shared/ imports no other room', () => {
  assert.deepEqual(importsBeyond('shared', ['shared']), []);
});

it(`no file in src/cli/ is over ${maxCliFileLines} lines: cli/ parses and dispatches, runtime/ prepares the run`, () => {
  const cli = files.filter((file) => roomOf(file.path) === 'cli');
  const lines = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  assert.deepEqual(cli.filter((file) => lines(file.text) > maxCliFileLines).map((file) => `${file.path}: ${lines(file.text)} lines`), []);
});

/** The imports of a room's modules that reach a room outside `allowed`, as `module → module`. */
function importsBeyond(room: string, allowed: readonly string[]): string[] {
  const modules = files.filter((file) => roomOf(file.path) === room);
  return modules.flatMap((file) => file.imports.filter((path) => !allowed.includes(roomOf(path))).map((path) => `${file.path} → ${path}`));
}

/** Each room and the other rooms its modules import. */
function roomGraph(modules: readonly SourceFile[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const module of modules) {
    const from = roomOf(module.path);
    const edges = graph.get(from) ?? graph.set(from, new Set()).get(from)!;
    for (const path of module.imports) if (roomOf(path) !== from) edges.add(roomOf(path));
  }
  return graph;
}

/** Tarjan's strongly connected components, each sorted, largest first. */
function stronglyConnected(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    for (let top = stack.pop()!; ; top = stack.pop()!) {
      component.push(top);
      if (top === node) break;
    }
    components.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return components.sort((a, b) => b.length - a.length || a[0]!.localeCompare(b[0]!));
}
