import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Command } from 'commander';
import { proxyFlags, toOption } from '../cli/proxy-flags.ts';
import { applyProxyConfig } from './apply-proxy-config.ts';
import { readPodInfo } from './pod-info.ts';
import { mergeProxyConfigs, parseProxyConfigText, proxyConfigCaps, proxyStatsMatcher, readProxyConfigSources } from './proxy-config-sources.ts';

/** Parses a command line with the real flag table, then lays ProxyConfig under it as the CLI does. */
function settle(args: string[], env: Record<string, string>, sources: { name: string; value: Record<string, unknown> }[]) {
  const command = new Command('proxy').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const spec of proxyFlags) command.addOption(toOption(spec));
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    command.parse(args, { from: 'user' });
  } finally {
    process.env = saved;
  }
  const flags = command.opts();
  const applied = applyProxyConfig({ specs: proxyFlags, flags, sourceOf: (name) => command.getOptionValueSource(name), merged: mergeProxyConfigs(sources) });
  return { flags, applied };
}

const mesh = (value: Record<string, unknown>) => ({ name: 'mesh config m (defaultConfig)', value });
const env = (value: Record<string, unknown>) => ({ name: 'env PROXY_CONFIG', value });
const annotation = (value: Record<string, unknown>) => ({ name: 'annotation proxy.istio.io/config (a)', value });

describe('ProxyConfig under the flags: Istio\'s precedence', () => {
  const rows: { name: string; args: string[]; env?: Record<string, string>; sources: ReturnType<typeof mesh>[]; flag: string; want: unknown }[] = [
    { name: 'the default when nothing sets it', args: [], sources: [], flag: 'drainDuration', want: 45_000 },
    { name: 'mesh defaultConfig over the default', args: [], sources: [mesh({ drainDuration: '20s' })], flag: 'drainDuration', want: 20_000 },
    {
      name: 'PROXY_CONFIG over the mesh file',
      args: [],
      sources: [mesh({ drainDuration: '20s' }), env({ drainDuration: '10s' })],
      flag: 'drainDuration',
      want: 10_000,
    },
    {
      name: 'the annotation over PROXY_CONFIG',
      args: [],
      sources: [mesh({ drainDuration: '20s' }), env({ drainDuration: '10s' }), annotation({ drainDuration: '7s' })],
      flag: 'drainDuration',
      want: 7000,
    },
    {
      name: 'a flag on the command line over all of them',
      args: ['--drainDuration', '3s'],
      sources: [env({ drainDuration: '10s' }), annotation({ drainDuration: '7s' })],
      flag: 'drainDuration',
      want: 3000,
    },
    {
      name: "the flag's own env var over ProxyConfig",
      args: [],
      env: { TERMINATION_DRAIN_DURATION_SECONDS: '9' },
      sources: [env({ terminationDrainDuration: '5s' })],
      flag: 'terminationDrainDuration',
      want: 9000,
    },
    {
      name: 'integers and nested fields',
      args: [],
      sources: [env({ proxyAdminPort: 16000, concurrency: 2, tracing: { zipkin: { address: 'zipkin:9411' } } })],
      flag: 'proxyAdminPort',
      want: 16_000,
    },
    { name: 'the bootstrap template path', args: [], sources: [env({ proxyBootstrapTemplatePath: '/t.json' })], flag: 'templateFile', want: '/t.json' },
    // protojson takes the proto field name as well as the JSON name, as Istio's agent does.
    { name: 'a field by its proto name (snake_case)', args: [], sources: [env({ drain_duration: '12s' })], flag: 'drainDuration', want: 12_000 },
    {
      name: 'a proto name in a later source replaces the JSON name of an earlier one',
      args: [],
      sources: [mesh({ drainDuration: '20s' }), annotation({ drain_duration: '8s' })],
      flag: 'drainDuration',
      want: 8000,
    },
    {
      name: 'an integer field by its proto name',
      args: [],
      sources: [env({ proxy_admin_port: 16001, tracing: { zipkin: { address: 'zipkin:9411' } } })],
      flag: 'proxyAdminPort',
      want: 16_001,
    },
  ];
  for (const row of rows) {
    it(row.name, () => assert.deepEqual(settle(row.args, row.env ?? {}, row.sources).flags[row.flag], row.want));
  }

  it("a field set twice in one source, by its JSON and its proto name, is refused naming both (protojson's duplicate field)", () => {
    assert.throws(() => mergeProxyConfigs([env({ drainDuration: '5s', drain_duration: '6s' })]), {
      message: 'env PROXY_CONFIG: field drain_duration is set twice (also as drainDuration)',
    });
  });

  it('proxyStatsMatcher and its lists by their proto names', () => {
    const merged = mergeProxyConfigs([env({ proxy_stats_matcher: { inclusion_prefixes: ['cluster.'], inclusionSuffixes: ['.rq'] } })]);
    assert.deepEqual(proxyStatsMatcher(merged), { prefixes: ['cluster.'], suffixes: ['.rq'], regexps: undefined });
  });

  it('lists the fields that took effect', () => {
    const { applied, flags } = settle(['--concurrency', '4'], {}, [env({ concurrency: 2, tracing: { zipkin: { address: 'zipkin:9411' } } })]);
    assert.deepEqual(applied, ['tracing.zipkin.address']);
    assert.equal(flags.concurrency, 4);
  });
});

describe('bad ProxyConfig is bad input naming the source and the field', () => {
  const cases: [string, () => unknown, RegExp][] = [
    ['a field of the wrong JSON type', () => mergeProxyConfigs([env({ proxyAdminPort: 'x' })]), /^env PROXY_CONFIG: field proxyAdminPort must be an integer/],
    [
      'a value the flag refuses',
      () => settle([], {}, [annotation({ proxyAdminPort: 70_000 })]),
      /^annotation proxy\.istio\.io\/config \(a\): field proxyAdminPort: "70000": not a port/,
    ],
    ['a duration the flag refuses', () => settle([], {}, [env({ drainDuration: '9999999s' })]), /^env PROXY_CONFIG: field drainDuration: /],
    [
      'an enum value that is not one',
      () => settle([], {}, [env({ controlPlaneAuthPolicy: 'TLS' })]),
      /^env PROXY_CONFIG: field controlPlaneAuthPolicy: "TLS" is not one of NONE, MUTUAL_TLS/,
    ],
    [
      'a list that is not one',
      () => proxyStatsMatcher(mergeProxyConfigs([env({ proxyStatsMatcher: { inclusionPrefixes: 'a' } })])),
      /^env PROXY_CONFIG: field proxyStatsMatcher\.inclusionPrefixes must be an array of strings/,
    ],
  ];
  for (const [name, run, message] of cases) {
    it(name, () => assert.throws(run, (error: Error & { exitCode?: number }) => message.test(error.message) && error.exitCode === 2));
  }

  it('text that does not parse, JSON or YAML', async () => {
    for (const text of ['{"drainDuration": ', 'drainDuration: [']) {
      await assert.rejects(
        parseProxyConfigText('env PROXY_CONFIG', text),
        (error: Error & { exitCode?: number }) => /^env PROXY_CONFIG: does not parse as JSON or YAML/.test(error.message) && error.exitCode === 2,
      );
    }
  });

  it('unknown fields are listed, not refused', () => {
    assert.deepEqual(mergeProxyConfigs([env({ noSuchField: 1, drainDuration: '5s' })]).unknown, [{ source: 'env PROXY_CONFIG', field: 'noSuchField' }]);
  });
});

describe('reading the three sources', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'proxy-config-sources-'));
    await writeFile(
      join(dir, 'mesh'),
      'defaultConfig:\n  drainDuration: 20s\n  statusPort: 15020\n  proxyStatsMatcher:\n    inclusionPrefixes: [upstream_rq]\n',
    );
    await writeFile(join(dir, 'annotations'), 'proxy.istio.io/config="drainDuration: 7s\\nconcurrency: 1\\n"\nother="x"\n');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('YAML mesh file, JSON env, YAML annotation, merged in Istio\'s order', async () => {
    const merged = await readProxyConfigSources({
      env: { PROXY_CONFIG: '{"drainDuration":"10s","concurrency":2}' },
      meshConfigPath: join(dir, 'mesh'),
      podInfoDir: dir,
      podInfo: await readPodInfo(dir),
    });
    assert.deepEqual(merged.value, { drainDuration: '7s', statusPort: 15020, proxyStatsMatcher: { inclusionPrefixes: ['upstream_rq'] }, concurrency: 1 });
    assert.equal(merged.origin.statusPort, `mesh config ${join(dir, 'mesh')} (defaultConfig)`);
    assert.deepEqual(proxyStatsMatcher(merged), { prefixes: ['upstream_rq'], suffixes: undefined, regexps: undefined });
  });

  it('missing files are no source at all', async () => {
    assert.deepEqual((await readProxyConfigSources({ env: {}, meshConfigPath: join(dir, 'absent'), podInfoDir: join(dir, 'absent'), podInfo: {} })).value, {});
  });

  it(
    'a mesh file or PROXY_CONFIG over its cap, or a mesh file that is a FIFO, is exit 2 naming it, unparsed (annotations: pod-info.test.ts)',
    { timeout: 10_000 },
    async () => {
      const big = await mkdtemp(join(tmpdir(), 'proxy-config-cap-'));
      try {
        await writeFile(join(big, 'mesh'), `defaultConfig: {}\n#${'x'.repeat(proxyConfigCaps.meshConfigBytes)}`);
        execFileSync('mkfifo', [join(big, 'fifo')]);
        const rows: [string, Parameters<typeof readProxyConfigSources>[0], RegExp][] = [
          [
            'mesh file',
            { env: {}, meshConfigPath: join(big, 'mesh'), podInfoDir: dir, podInfo: {} },
            new RegExp(`^--meshConfig ${join(big, 'mesh')}: is \\d+ bytes, more than the 1048576 allowed$`),
          ],
          [
            'PROXY_CONFIG',
            { env: { PROXY_CONFIG: `{"a":"${'x'.repeat(proxyConfigCaps.envBytes)}"}` }, meshConfigPath: join(dir, 'absent'), podInfoDir: dir, podInfo: {} },
            /^env PROXY_CONFIG: is \d+ bytes, more than the 262144 allowed$/,
          ],
          [
            'FIFO',
            { env: {}, meshConfigPath: join(big, 'fifo'), podInfoDir: dir, podInfo: {} },
            new RegExp(`^--meshConfig ${join(big, 'fifo')}: is not a regular file \\(a FIFO\\)$`),
          ],
        ];
        for (const [name, inputs, message] of rows) {
          await assert.rejects(
            readProxyConfigSources(inputs),
            (error: Error & { exitCode?: number }) => (assert.match(error.message, message, name), error.exitCode === 2),
          );
        }
      } finally {
        await rm(big, { recursive: true, force: true });
      }
    },
  );
});
