import assert from 'node:assert/strict';
import { readFile, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { assertGone, startAgent } from '../support/agent.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { agentBin, nodeBin } from '../support/paths.ts';

type Bootstrap = any;
const statsdHost = (bootstrap: Bootstrap) => bootstrap.stats_sinks[0].typed_config.address.socket_address.address;
const zipkinHost = (bootstrap: Bootstrap) =>
  bootstrap.static_resources.clusters.find((cluster: Bootstrap) => cluster.name === 'zipkin').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address
    .socket_address.address;

/** ProxyConfig from the mesh file, PROXY_CONFIG and the pod annotation, through the real CLI. */
describe('ProxyConfig sources under the flags', () => {
  let dir: string;
  let peer: Peer;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'proxy-config-e2e-'));
    await writeFile(
      join(dir, 'mesh'),
      'defaultConfig:\n  zipkinAddress: ignored-below\n  tracing:\n    zipkin:\n      address: zipkin.mesh:9411\n  statsdUdpAddress: 127.0.0.10:8125\n  noSuchField: 1\n',
    );
    await writeFile(join(dir, 'annotations'), 'proxy.istio.io/config="statsdUdpAddress: 127.0.0.11:8125\\nconcurrency: 1\\n"\n');
    peer = await startPeer([]);
  });
  after(async () => {
    await peer?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const printBootstrap = (args: string[], env: Record<string, string>) =>
    execa(
      nodeBin,
      [
        agentBin,
        'proxy',
        'sidecar',
        '--serviceregistry',
        'Other',
        '--ip',
        '127.0.0.1',
        '--configPath',
        join(dir, 'config'),
        '--meshConfig',
        join(dir, 'mesh'),
        '--podInfoDir',
        dir,
        '--print-bootstrap',
        ...args,
      ],
      { env, reject: false },
    );

  it('the mesh file, then PROXY_CONFIG, then the annotation, then the command line', async () => {
    const result = await printBootstrap([], { PROXY_CONFIG: '{"tracing":{"zipkin":{"address":"zipkin.env:9411"}}}' });
    assert.equal(result.exitCode, 0, result.stderr);
    const bootstrap = JSON.parse(result.stdout);
    assert.equal(zipkinHost(bootstrap), 'zipkin.env', 'PROXY_CONFIG over the mesh file');
    assert.equal(statsdHost(bootstrap), '127.0.0.11', 'the annotation over the mesh file');
    const flagWins = await printBootstrap(['--statsdUdpAddress', '127.0.0.12:8125'], {});
    assert.equal(statsdHost(JSON.parse(flagWins.stdout)), '127.0.0.12', 'the command line over all');
    assert.equal(zipkinHost(JSON.parse(flagWins.stdout)), 'zipkin.mesh', 'the mesh file alone');
  });

  it('a field of the wrong type exits 2 naming the source and the field', async () => {
    const result = await printBootstrap([], { PROXY_CONFIG: '{"proxyAdminPort":"not-a-port"}' });
    assert.equal(result.exitCode, 2);
    assert.match(result.stderr.trim(), /^pilot-agent: env PROXY_CONFIG: field proxyAdminPort must be an integer[^\n]*$/);
  });

  it('a mesh config file over 1 MiB exits 2 with one line naming the file, before it is parsed', async () => {
    const mesh = join(dir, 'mesh-50m');
    await writeFile(mesh, `defaultConfig:\n  concurrency: 1\n#${'x'.repeat(50 * 1024 * 1024)}\n`);
    try {
      const result = await execa(
        nodeBin,
        [
          agentBin,
          'proxy',
          'sidecar',
          '--serviceregistry',
          'Other',
          '--ip',
          '127.0.0.1',
          '--configPath',
          join(dir, 'config'),
          '--meshConfig',
          mesh,
          '--print-bootstrap',
        ],
        { reject: false },
      );
      assert.equal(result.exitCode, 2, result.stderr);
      assert.equal(result.stderr.trim(), `pilot-agent: --meshConfig ${mesh}: is ${(await stat(mesh)).size} bytes, more than the 1048576 allowed`);
    } finally {
      await rm(mesh, { force: true });
    }
  });

  it('a FIFO as the downward-API labels file exits 2 naming it, instead of hanging the start', { timeout: 30_000 }, async () => {
    const podInfo = join(dir, 'pod-info-fifo');
    await execa('mkdir', ['-p', podInfo]);
    await execa('mkfifo', [join(podInfo, 'labels')]);
    const result = await execa(
      nodeBin,
      [
        agentBin,
        'proxy',
        'sidecar',
        '--serviceregistry',
        'Other',
        '--ip',
        '127.0.0.1',
        '--configPath',
        join(dir, 'config'),
        '--podInfoDir',
        podInfo,
        '--print-bootstrap',
      ],
      { reject: false, timeout: 20_000 },
    );
    assert.equal(result.exitCode, 2, result.stderr);
    assert.equal(result.stderr.trim(), `pilot-agent: ${join(podInfo, 'labels')}: is not a regular file (a FIFO)`);
  });

  it('Envoy runs with what ProxyConfig set, and the agent says which fields it took and which it ignored', { timeout: 60_000 }, async () => {
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--meshConfig', join(dir, 'mesh'), '--podInfoDir', dir] });
    try {
      const started = await agent.log.waitFor((entry) => entry.msg === 'envoy started', 20_000, 'Envoy to start');
      const commandLine = (await readFile(`/proc/${started.envoyPid}/cmdline`, 'utf8')).split('\0');
      assert.equal(commandLine[commandLine.indexOf('--concurrency') + 1], '1', 'the annotation\'s concurrency');
      assert.ok(agent.log.entries.some((entry) => entry.msg === 'ProxyConfig field is not known; ignored' && entry.field === 'noSuchField'));
      assert.ok(agent.log.entries.some((entry) => entry.msg === 'settings taken from ProxyConfig' && (entry.fields as string[]).includes('concurrency')));
    } finally {
      await agent.stop('SIGTERM');
      await assertGone(agent.envoyPids());
    }
  });
});
