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
  /** Every module it imports as written (`./x.ts`, `node:http`, `yaml`), in order. */
  readonly specifiers: readonly ImportOf[];
}

export interface ImportOf {
  readonly from: string;
  /** `import type`, `export type` or `typeof import(…)`: erased, it loads nothing. */
  readonly typeOnly: boolean;
}

const importPattern =
  /(?:^|\n)\s*(?:import|export)\b([^'";]*?)\bfrom\s*['"]([^'"]+)['"]|(\btypeof\s+)?\bimport\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;

/** The modules a text imports: static, re-exports, type-only (and type queries), dynamic and bare imports alike. */
export function importsIn(text: string): ImportOf[] {
  return [...text.matchAll(importPattern)].map((match) => ({
    from: (match[2] ?? match[4] ?? match[5])!,
    typeOnly: /^\s*type\b/.test(match[1] ?? '') || match[3] !== undefined,
  }));
}

/** Every production module under src/, sorted by path. */
export function readSourceFiles(): SourceFile[] {
  const root = repoRoot;
  return listModules(join(root, 'src'))
    .map((file) => {
      const text = readFileSync(file, 'utf8');
      const specifiers = importsIn(text);
      return { path: relative(root, file), text, imports: localImports(root, file, specifiers), specifiers };
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

function localImports(root: string, file: string, specifiers: readonly ImportOf[]): string[] {
  const local = specifiers.filter(({ from }) => from.startsWith('.'));
  return [...new Set(local.map(({ from }) => relative(root, resolve(dirname(file), from))))];
}
