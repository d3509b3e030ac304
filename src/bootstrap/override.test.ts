import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readBootstrapOverride, substituteHostIp } from './override.ts';

describe('ISTIO_BOOTSTRAP_OVERRIDE', () => {
  it('substitutes $(HOST_IP), bracketing an IPv6 one once', () => {
    const rows: [string, string | undefined, string][] = [
      ['address: $(HOST_IP):8126', '10.0.0.9', 'address: 10.0.0.9:8126'],
      ['address: $(HOST_IP):8126', 'fd00::9', 'address: [fd00::9]:8126'],
      ['address: [$(HOST_IP)]:8126', 'fd00::9', 'address: [fd00::9]:8126'],
      ['a: $(HOST_IP), b: $(HOST_IP)', '10.0.0.9', 'a: 10.0.0.9, b: 10.0.0.9'],
      ['address: $(HOST_IP)', undefined, 'address: '],
    ];
    for (const [text, ip, want] of rows) assert.equal(substituteHostIp(text, ip), want, `${text} with ${ip}`);
  });

  it('YAML becomes one line of JSON; a bad file is bad input naming it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'override-test-'));
    try {
      const good = join(dir, 'custom_bootstrap.yaml');
      await writeFile(good, 'tracing:\n  http:\n    name: dd\n    address: $(HOST_IP):8126\nstats_flush_interval: 7s\n');
      assert.deepEqual(JSON.parse(await readBootstrapOverride(good, '10.0.0.9')), {
        tracing: { http: { name: 'dd', address: '10.0.0.9:8126' } },
        stats_flush_interval: '7s',
      });
      const list = join(dir, 'list.yaml');
      await writeFile(list, '- a\n- b\n');
      const broken = join(dir, 'broken.yaml');
      await writeFile(broken, 'a: [1, 2\n');
      for (const [path, reason] of [
        [list, /must be a bootstrap object/],
        [broken, /is not YAML or JSON/],
        [join(dir, 'absent.yaml'), /cannot read \(ENOENT\)/],
      ] as const) {
        await assert.rejects(readBootstrapOverride(path, undefined), (error: Error & { exitCode: number }) => {
          assert.match(error.message, new RegExp(`^--bootstrapOverride \\(env ISTIO_BOOTSTRAP_OVERRIDE\\) ${path.replace(/[.]/g, '\\.')}: `));
          assert.match(error.message, reason);
          assert.equal(error.exitCode, 2);
          return true;
        });
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
