/**
 * The product's source as the house scans read it: every `src/` module
 * that is not a test, its lines, and the modules it imports (static,
 * re-exports, type-only and dynamic imports alike).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { repoRoot } from './paths.ts';

export interface SourceFile {
  /** Path from the repository root, e.g. `src/agent/reconcile.ts`. */
  readonly path: string;
  readonly text: string;
  /** Repository paths of the `src/` modules it imports. */
  readonly imports: readonly string[];
}

const importPattern = /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*'([^']+)'|\bimport\(\s*'([^']+)'\s*\)|(?:^|\n)\s*import\s*'([^']+)'/g;

/** Every production module under src/, sorted by path. */
export function readSourceFiles(): SourceFile[] {
  const root = repoRoot;
  return listModules(join(root, 'src'))
    .map((file) => {
      const text = readFileSync(file, 'utf8');
      return { path: relative(root, file), text, imports: localImports(root, file, text) };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
}

/** The room a module lives in: its first folder under src/ (`xds/relay` counts as `xds`). */
export function roomOf(path: string): string {
  return path.split('/')[1] ?? '';
}

function listModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

function localImports(root: string, file: string, text: string): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(importPattern)) {
    const specifier = match[1] ?? match[2] ?? match[3];
    if (specifier?.startsWith('.')) found.add(relative(root, resolve(dirname(file), specifier)));
  }
  return [...found];
}
