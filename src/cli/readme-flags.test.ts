import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { proxyFlags } from './proxy-flags.ts';

test('README lists every visible proxy flag', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const spec of proxyFlags.filter((flag) => !flag.hidden)) {
    assert.match(readme, new RegExp(`\\| \`--${spec.flag}\` \\|`), `--${spec.flag} missing from README`);
  }
});
