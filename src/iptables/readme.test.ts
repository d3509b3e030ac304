import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { iptablesEnvOnly, iptablesFlags, renderIptablesEnvRow, renderIptablesFlagRow } from './flags.ts';

const readme = readFileSync(new URL('../../docs/traffic-capture.md', import.meta.url), 'utf8');

describe("docs/traffic-capture.md's istio-iptables table", () => {
  it('lists every flag with its env vars and default, then the env-only settings, in order', () => {
    const start = readme.indexOf('<!-- iptables-flags:begin');
    const stop = readme.indexOf('<!-- iptables-flags:end', start);
    assert.ok(start >= 0 && stop > start, 'docs/traffic-capture.md has no iptables-flags markers');
    const rows = readme.slice(start, stop).split('\n').filter((line) => line.startsWith('| `') || line.startsWith('| | '));
    const expected = [...iptablesFlags.map(renderIptablesFlagRow), ...Object.values(iptablesEnvOnly).map(renderIptablesEnvRow)];
    assert.deepEqual(rows, expected, 'stale: regenerate the rows from src/iptables/flags.ts');
  });
});
