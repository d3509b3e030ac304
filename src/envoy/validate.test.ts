import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envoyBin } from '../../test/support/paths.ts';
import { bootstrapVerdict } from './validate.ts';

describe('bootstrapVerdict: Envoy\'s verdict, and --binaryPath checked only when the verdict is not its OK', () => {
  let dir: string;
  let valid: string;
  let invalid: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'validate-'));
    valid = join(dir, 'valid.json');
    invalid = join(dir, 'invalid.json');
    await writeFile(valid, JSON.stringify({ admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } } }));
    await writeFile(invalid, JSON.stringify({ admin: { address: { socket_address: { address: '127.0.0.1', port_value: 'nope' } } } }));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('accepts what Envoy accepts', async () => {
    assert.deepEqual(await bootstrapVerdict(envoyBin, valid), { accepted: true });
  });

  it('a bootstrap whose access logs go to /dev/stdout and /dev/stderr is accepted, as Envoy serves it (no output socket to open), and leaves no file', async () => {
    const logTo = (path: string) => ({
      name: 'envoy.access_loggers.file',
      typed_config: { '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog', path },
    });
    const tcpProxy = (path: string) => ({
      name: 'envoy.filters.network.tcp_proxy',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', stat_prefix: 'p', cluster: 'c', access_log: [logTo(path)],
      },
    });
    const listener = (name: string, path: string) => ({
      name, address: { socket_address: { address: '127.0.0.1', port_value: 0 } }, filter_chains: [{ filters: [tcpProxy(path)] }],
    });
    const bootstrap = join(dir, 'access-logs.json');
    const clusters = [{ name: 'c', type: 'STATIC', connect_timeout: '1s' }];
    await writeFile(bootstrap, JSON.stringify({ static_resources: { listeners: [listener('out', '/dev/stdout'), listener('err', '/dev/stderr')], clusters } }));
    assert.deepEqual(await bootstrapVerdict(envoyBin, bootstrap), { accepted: true });
    assert.deepEqual((await readdir(dir)).filter((name) => name.startsWith('.')), []);
  });

  it('a bootstrap Envoy rejects is BOOTSTRAP_REJECTED with its reason', async () => {
    const verdict = await bootstrapVerdict(envoyBin, invalid);
    assert.ok(!verdict.accepted);
    assert.equal(verdict.code, 'BOOTSTRAP_REJECTED');
    assert.equal(verdict.message, `${invalid}: Envoy rejects the bootstrap: ${verdict.reason}`);
    assert.match(verdict.reason, /port_value/);
  });

  it('an extension of Istio\'s own Envoy build (a waypoint\'s metadata discovery) is named with the build that has it', async () => {
    const istioOnly = join(dir, 'istio-only.json');
    const extension = { name: 'metadata_discovery', typed_config: { '@type': 'type.googleapis.com/udpa.type.v1.TypedStruct', type_url: 'type.googleapis.com/istio.workload.BootstrapExtension', value: {} } };
    await writeFile(istioOnly, JSON.stringify({ bootstrap_extensions: [extension] }));
    const verdict = await bootstrapVerdict(envoyBin, istioOnly);
    assert.ok(!verdict.accepted);
    assert.match(verdict.message, /istio\.workload\.BootstrapExtension is in Istio's own Envoy build, not upstream Envoy: run with Istio's proxyv2 Envoy\)$/);
    const plain = await bootstrapVerdict(envoyBin, invalid);
    assert.ok(!plain.accepted && !plain.message.includes("Istio's own Envoy build"));
  });

  // /bin/true exits 0 to anything: a zero exit without Envoy's OK line is no verdict.
  for (const binary of ['/bin/true', '/bin/false']) {
    it(`${binary} is not an Envoy, named as --binaryPath`, async () => {
      const verdict = await bootstrapVerdict(binary, valid);
      assert.ok(!verdict.accepted);
      assert.equal(verdict.code, 'BAD_FLAG');
      assert.match(verdict.message, new RegExp(`^--binaryPath: ${binary} is not an Envoy`));
    });
  }
});

describe('bootstrapVerdict with a stand-in Envoy: which flag is to blame, and a binary that cannot run', () => {
  let dir: string;
  let bootstrap: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'validate-stand-in-'));
    bootstrap = join(dir, 'bootstrap.json');
    await writeFile(bootstrap, '{}');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A stand-in that accepts the bootstrap alone and refuses it with any flag past `-l error` (its 7th argument). */
  async function refusingFlags(): Promise<string> {
    const path = join(dir, 'envoy');
    await writeFile(path, `#!/bin/sh
case "$1" in --version) echo "envoy  version: stand-in/1.40.0/Clean/RELEASE/BoringSSL"; exit 0 ;; esac
if [ -n "$7" ]; then echo "[2026-11-25 00:00:00.000][1][critical][main] error: unknown component 'nope'"; exit 1; fi
echo "configuration '$4' OK"
`, { mode: 0o755 });
    return path;
  }

  const cases = [
    { extraArgs: ['--component-log-level', 'nope:debug'], flag: '--proxyComponentLogLevel' },
    { extraArgs: ['--concurrency', '999'], flag: '--concurrency' },
    { extraArgs: ['--component-log-level', 'nope:debug', '--concurrency', '2'], flag: '--proxyComponentLogLevel or --concurrency' },
  ];
  for (const { extraArgs, flag } of cases) {
    it(`flags Envoy refuses where the bootstrap alone passes: BAD_FLAG naming ${flag}`, async () => {
      const verdict = await bootstrapVerdict(await refusingFlags(), bootstrap, { extraArgs });
      assert.deepEqual(verdict, {
        accepted: false,
        code: 'BAD_FLAG',
        reason: `${flag}: Envoy rejects it: error: unknown component 'nope'`,
        message: `${flag}: Envoy rejects it: error: unknown component 'nope'`,
      });
    });
  }

  it('the same stand-in with no extra flags accepts', async () => {
    assert.deepEqual(await bootstrapVerdict(await refusingFlags(), bootstrap, { niceness: 5 }), { accepted: true });
  });

  it('a missing or non-executable binary: BAD_FLAG --binaryPath with the errno', async () => {
    const missing = await bootstrapVerdict(join(dir, 'missing'), bootstrap);
    assert.deepEqual(missing, {
      accepted: false,
      code: 'BAD_FLAG',
      reason: `--binaryPath: cannot run ${join(dir, 'missing')} (ENOENT)`,
      message: `--binaryPath: cannot run ${join(dir, 'missing')} (ENOENT)`,
    });
    const plain = join(dir, 'plain');
    await writeFile(plain, 'not a program', { mode: 0o644 });
    const verdict = await bootstrapVerdict(plain, bootstrap);
    assert.ok(!verdict.accepted);
    assert.equal(verdict.message, `--binaryPath: cannot run ${plain} (EACCES)`);
  });
});
