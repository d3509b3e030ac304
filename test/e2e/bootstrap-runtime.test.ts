import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup, tempDir } from '../support/cleanup.ts';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';

/**
 * A route regex istiod accepts but whose RE2 program (a few hundred
 * instructions) is over Envoy's own default limit of 100: only Istio's
 * runtime layer (re2.max_program_size.error_level 32768) lets Envoy take it.
 */
const bigRegex = '^/(alpha|beta|gamma|delta|epsilon|zeta|theta|kappa|lambda|sigma)/[a-z0-9-]{1,32}/v[0-9]{1,3}$';

function regexListener(port: number): unknown {
  const manager = {
    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    stat_prefix: 'regex',
    route_config: {
      name: 'regex',
      virtual_hosts: [
        {
          name: 'all',
          domains: ['*'],
          routes: [{ match: { safe_regex: { regex: bigRegex } }, direct_response: { status: 200, body: { inline_string: 'big regex' } } }],
        },
      ],
    },
    http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
  };
  return {
    '@type': 'type.googleapis.com/envoy.config.listener.v3.Listener',
    name: 'regex',
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: manager }] }],
  };
}

/** GET with headers, no decompression: the raw status, headers and body length. */
function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, timeout: 5000 }, (response) => {
      const chunks: Buffer[] = [];
      response
        .on('data', (chunk: Buffer) => chunks.push(chunk))
        .on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out'))).on('error', reject).end();
  });
}

async function eventually<T>(what: string, attempt: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One HTTP/1.1 keep-alive request on a raw socket: the status line, or 'closed' when Envoy closes it unanswered. */
function rawRequest(socket: Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('\r\n\r\n')) done(seen.split('\r\n')[0]!);
    };
    const done = (result: string) => {
      socket.off('data', onData).off('close', onClose).off('error', onClose);
      resolve(result);
    };
    const onClose = () => done('closed');
    socket.on('data', onData).once('close', onClose).once('error', onClose);
    socket.write(`GET ${path} HTTP/1.1\r\nhost: test\r\n\r\n`);
  });
}

async function openSocket(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

const admin = async (agent: RunningAgent, path: string) => JSON.parse((await get(agent.adminPort, path)).body.toString()) as any;
const notRenderedWarning = 'ProxyConfig tracing provider or service is configured but the bootstrap does not render it; ignored';

describe('the bootstrap\'s runtime layers, JSON log, stats compression and connection limit in the real Envoy', () => {
  const cleanup = suiteCleanup();
  let peer: Peer;
  let listenerPort: number;

  before(async () => {
    listenerPort = await freePort();
    peer = await startPeer([regexListener(listenerPort)]);
    cleanup.defer(() => peer.stop());
  });

  describe('an agent with JSON logs, a Prometheus port, a connection limit and a datadog tracer, serving the regex route', () => {
    const agentCleanup = suiteCleanup();
    let prometheusPort: number;
    let agent: RunningAgent;
    let answer: string;

    before(async () => {
      prometheusPort = await freePort();
      const proxyConfig = { connectionSettings: { globalDownstreamConnectionLimit: 123 }, tracing: { datadog: { address: '127.0.0.1:8126' } } };
      agent = await startAgent({
        discoveryAddress: peer.address,
        args: ['--log_as_json', '--proxyLogLevel', 'info', '--prometheusPort', String(prometheusPort)],
        env: { PROXY_CONFIG: JSON.stringify(proxyConfig) },
      });
      deferStop(agentCleanup, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
      answer = await eventually('the regex route', async () => {
        const response = await get(listenerPort, '/kappa/some-name/v2');
        return response.status === 200 ? response.body.toString() : undefined;
      });
    });

    it('takes the large route regex, shows both layers on /runtime, logs JSON, gzips 15090 and sets the limit', async () => {
      assert.equal(answer, 'big regex');
      const runtime = await admin(agent, '/runtime');
      assert.deepEqual(runtime.layers, ['global config', 'admin']);
      assert.equal(runtime.entries['re2.max_program_size.error_level'].final_value, '32768');
      const scraped = await get(prometheusPort, '/stats/prometheus', { 'accept-encoding': 'gzip' });
      assert.equal(scraped.status, 200);
      assert.equal(scraped.headers['content-encoding'], 'gzip');
      assert.equal((await get(prometheusPort, '/stats/prometheus')).headers['content-encoding'], undefined, 'plain when not asked for');
      const dump = await admin(agent, '/config_dump');
      const bootstrap = dump.configs.find((config: any) => config['@type'].endsWith('BootstrapConfigDump')).bootstrap;
      const monitor = bootstrap.overload_manager.resource_monitors[0];
      assert.equal(monitor.typed_config.max_active_downstream_connections, '123');
      // Only Istio's JSON lines carry the caller: Envoy wrote JSON, which the agent read into its own entries.
      const fromJson = agent.log.entries.filter((entry) => entry.envoyComponent !== undefined && typeof entry.caller === 'string');
      assert.ok(fromJson.length > 0, 'Envoy\'s lines arrived as JSON');
    });

    it('warns that the datadog tracer is configured but not rendered', () => {
      const warning = agent.log.find((entry) => entry.msg === notRenderedWarning);
      assert.deepEqual([warning?.level, warning?.field], [40, 'tracing.datadog']);
    });
  });

  it('refuses the same route once runtimeValues removes the RE2 default (as before the runtime layer), and warns for nothing', async () => {
    await using stack = new AsyncDisposableStack();
    const from = peer.log.entries.length;
    const agent = await startAgent({
      discoveryAddress: peer.address,
      env: { PROXY_CONFIG: JSON.stringify({ runtimeValues: { 're2.max_program_size.error_level': '' } }) },
    });
    deferStop(stack, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    const nack = await peer.log.waitFor((entry) => entry.event === 'request' && typeof entry.error === 'string' && entry.error !== '', 20_000, 'a NACK', from);
    assert.match(String(nack.error), /program size/i);
    const runtime = await admin(agent, '/runtime');
    assert.equal(runtime.entries['re2.max_program_size.error_level'], undefined);
    assert.equal(agent.log.find((entry) => entry.msg === notRenderedWarning), undefined);
  });

  it('a global limit of 1 holds the second connection off while the Prometheus listener, outside the limit, still answers', async () => {
    await using stack = new AsyncDisposableStack();
    const prometheusPort = await freePort();
    const proxyConfig = { proxyMetadata: { ISTIO_META_GLOBAL_DOWNSTREAM_MAX_CONNECTIONS: '1' } };
    const agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--prometheusPort', String(prometheusPort)],
      env: { PROXY_CONFIG: JSON.stringify(proxyConfig) },
    });
    deferStop(stack, agent, (result) => assert.equal(result.exitCode, 0, agent.stderr()));
    const first = await eventually('the regex listener', async () => {
      const socket = await openSocket(listenerPort);
      if ((await rawRequest(socket, '/kappa/a/v1')).startsWith('HTTP/1.1 200')) return socket;
      socket.destroy();
      return undefined;
    });
    stack.defer(() => void first.destroy());
    const second = await openSocket(listenerPort).catch(() => undefined);
    stack.defer(() => void second?.destroy());
    assert.equal(second ? await rawRequest(second, '/kappa/b/v1') : 'closed', 'closed', 'the second connection is over the limit');
    assert.equal((await get(prometheusPort, '/stats/prometheus')).status, 200, 'the scrape passes the limit');
    assert.equal(await rawRequest(first, '/kappa/c/v1').then((line) => line.slice(0, 12)), 'HTTP/1.1 200', 'the first connection still works');
  });

  it('with --log_as_json the rendered bootstrap makes the real Envoy write Istio\'s JSON lines on stderr', async () => {
    const dir = await tempDir(cleanup, 'pilot-agent-jsonlog-');
    const printed = await execa(
      nodeBin,
      [
        agentBin,
        'proxy',
        'sidecar',
        '--serviceregistry',
        'Other',
        '--ip',
        '127.0.0.1',
        '--discoveryAddress',
        '127.0.0.1:15010',
        '--configPath',
        join(dir, 'config'),
        '--certDir',
        join(dir, 'certs'),
        '--log_as_json',
        '--print-bootstrap',
      ],
      { reject: false, env: {}, extendEnv: false },
    );
    assert.equal(printed.exitCode, 0, printed.stderr);
    await writeFile(join(dir, 'bootstrap.json'), printed.stdout);
    const validated = await execa(envoyBin, ['--mode', 'validate', '-c', join(dir, 'bootstrap.json'), '-l', 'info'], { reject: false });
    assert.equal(validated.exitCode, 0, validated.stderr);
    const lines = validated.stderr.split('\n').filter((line) => line.trim() !== '');
    assert.ok(lines.length > 0);
    for (const line of lines) assert.deepEqual(Object.keys(JSON.parse(line)), ['time', 'level', 'scope', 'msg', 'caller', 'thread'], line);
  });
});
