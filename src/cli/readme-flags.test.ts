import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { envRows } from '../settings/registry.ts';
import { renderFlagRow } from '../settings/flags-table.ts';
import { proxyFlags } from './proxy-flags.ts';

// The flag table is in the README; the env table and the ProxyConfig fields in docs/settings.md.
const docs = {
  'README.md': readFileSync(new URL('../../README.md', import.meta.url), 'utf8'),
  'docs/settings.md': readFileSync(new URL('../../docs/settings.md', import.meta.url), 'utf8'),
};

/** The lines between two markers of a document. */
function section(file: keyof typeof docs, begin: string, end: string): string[] {
  const text = docs[file];
  const start = text.indexOf(begin);
  const stop = text.indexOf(end, start);
  assert.ok(start >= 0 && stop > start, `${file} has no ${begin} … ${end}`);
  return text.slice(start, stop).split('\n');
}

describe('README and docs/settings.md say what the settings\' rows say', () => {
  const visible = proxyFlags.filter((spec) => !spec.hidden);

  it('the flag table lists every visible flag with its default, env var and help, in order (scripts/flags-table.ts)', () => {
    const rows = section('README.md', '<!-- flags:begin', '<!-- flags:end').filter((line) => line.startsWith('| `--'));
    for (const [index, spec] of visible.entries()) {
      const line = rows.find((row) => row.startsWith(`| \`--${spec.flag}\` |`));
      assert.ok(line, `--${spec.flag} missing from README`);
      assert.equal(line, renderFlagRow(spec), `--${spec.flag}'s README row is stale: run scripts/flags-table.ts`);
      assert.equal(rows.indexOf(line), index, `--${spec.flag} out of order`);
    }
    assert.equal(rows.length, visible.length, 'README lists a flag the agent does not have');
  });

  it('the env table names every flag\'s env var next to its flag, and every env-only row\'s variable (settings/registry.ts)', () => {
    const envTable = section('docs/settings.md', '## Environment variables', '\n## ').filter((line) => line.startsWith('|'));
    const rowOf = (name: string) => envTable.find((line) => line.includes(`\`${name}\``));
    for (const spec of visible.filter((flag) => flag.env)) {
      assert.match(
        rowOf(spec.env!) ?? '',
        new RegExp(`\`--${spec.flag}\``),
        `${spec.env} missing from docs/settings.md's env table, or not next to --${spec.flag}`,
      );
    }
    for (const setting of envRows) {
      for (const name of [setting.env, setting.alsoEnv].filter((entry) => entry !== undefined))
        assert.ok(rowOf(name), `${name} missing from docs/settings.md's env table`);
    }
  });

  it('the ProxyConfig section names every field a flag takes from ProxyConfig', () => {
    const text = section('docs/settings.md', '## ProxyConfig fields', '\n## ').join('\n');
    for (const spec of proxyFlags.filter((flag) => flag.proxyConfig))
      assert.match(text, new RegExp(`\`${spec.proxyConfig!.replace(/\./g, '\\.')}\``), `ProxyConfig field ${spec.proxyConfig} missing from docs/settings.md`);
  });
});
