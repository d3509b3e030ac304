import assert from 'node:assert/strict';
import { test } from 'node:test';
import { importsIn, readSourceFiles } from './source-files.ts';

test('importsIn finds every form of import, type-only ones marked', () => {
  const text = [
    "import assert from 'node:assert/strict';",
    'import type { Logger } from "../shared/log.ts";',
    'import {',
    '  a,',
    '  type B,',
    "} from './multi.ts';",
    "export { c } from './re-export.ts';",
    "export type { D } from './types.ts';",
    "import './side-effect.ts';",
    "const late = await import('../dns/start.ts');",
    "export const http = require('node:http') as typeof import('node:http');",
    "const text = 'no import here';",
  ].join('\n');
  assert.deepEqual(importsIn(text), [
    { from: 'node:assert/strict', typeOnly: false },
    { from: '../shared/log.ts', typeOnly: true },
    { from: './multi.ts', typeOnly: false },
    { from: './re-export.ts', typeOnly: false },
    { from: './types.ts', typeOnly: true },
    { from: './side-effect.ts', typeOnly: false },
    { from: '../dns/start.ts', typeOnly: false },
    { from: 'node:http', typeOnly: true },
  ]);
});

test('readSourceFiles resolves local imports to repository paths, tests left out', () => {
  const files = readSourceFiles();
  assert.ok(files.every((file) => !file.path.endsWith('.test.ts')));
  const dns = files.find((file) => file.path === 'src/runtime/dns.ts');
  assert.ok(dns?.imports.includes('src/dns/start.ts'), 'a dynamic import counts');
});
