import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../shared/log.ts';
import { pollUntil } from '../../test/support/poll.ts';
import { handTimers } from '../../test/support/hand-timers.ts';
import { startStatusRig, type StatusRig } from '../../test/support/status-server-rig.ts';
import type { StatusDeps } from './handler.ts';
import { acceptsGzip } from './negotiate.ts';
import { gzipMinBytes, startStatusServer, statusConnectionLimits, statusSendTimeoutMs as sendTimeoutMs, type StatusServer } from './server.ts';

const bigMetrics = `# TYPE istio_agent_big gauge\n${Array.from({ length: 1_000_000 }, (_, i) => `istio_agent_big{n="${i}"} ${i}`).join('\n')}\n`;

let agentMetrics = bigMetrics;
const deps: StatusDeps = {
  readiness: { check: async () => ({ ready: true }) },
  agentMetrics: async () => agentMetrics,
  envoyMetrics: async () => ({ ok: true, status: 200, body: [] }),
  epochs: () => ({}),
  quit: () => undefined,
  drain: async () => true,
};

function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, headers, timeout: 10_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject).end();
  });
}

describe('the status server on its socket', () => {
  let rig: StatusRig;
  let server: StatusServer;
  before(async () => {
    rig = await startStatusRig(deps, 'status-server-');
    server = rig.server;
  });
  after(() => rig.close());

  it('Accept-Encoding: a gzip with a weight above 0, and only that', () => {
    for (const [header, want] of [
      ['gzip', true],
      ['br, gzip;q=0.8', true],
      ['GZIP', true],
      ['gzip;q=0', false],
      ['gzip; q=0.0', false],
      ['identity', false],
      ['', false],
      [undefined, false],
      ['xgzip', false],
    ] as const) {
      assert.equal(acceptsGzip(header), want, String(header));
    }
  });

  it('gzips the merged metrics when the scraper asks, and not otherwise', async () => {
    const zipped = await get(server.port, '/stats/prometheus', { 'accept-encoding': 'gzip' });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.ok(zipped.body.length < bigMetrics.length / 4, `${zipped.body.length} bytes`);
    assert.match(gunzipSync(zipped.body).toString('utf8'), /^istio_agent_big\{n="999999"\} 999999$/m);
    const plain = await get(server.port, '/stats/prometheus');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.match(plain.body.toString('utf8'), /^istio_agent_big\{n="0"\} 0$/m);
  });

  it(`gzips an answer of ${gzipMinBytes} bytes and more, never a shorter one`, async () => {
    const metrics = (pad: number) => `istio_agent_pad{l="${'x'.repeat(pad)}"} 1\n`;
    try {
      agentMetrics = metrics(0);
      const overhead = (await get(server.port, '/stats/prometheus')).body.length;
      for (const size of [gzipMinBytes - 1, gzipMinBytes, gzipMinBytes + 1]) {
        agentMetrics = metrics(size - overhead);
        const plain = await get(server.port, '/stats/prometheus');
        assert.equal(plain.body.length, size);
        const asked = await get(server.port, '/stats/prometheus', { 'accept-encoding': 'gzip' });
        assert.equal(asked.headers['content-encoding'], size < gzipMinBytes ? undefined : 'gzip', `${size} bytes`);
        assert.deepEqual(size < gzipMinBytes ? asked.body : gunzipSync(asked.body), plain.body);
      }
    } finally {
      agentMetrics = bigMetrics;
    }
  });
});

describe('the status server: its send timeout', () => {
  const timers = handTimers();
  let rig: StatusRig;
  before(async () => (rig = await startStatusRig(deps, 'status-send-', timers.host)));
  after(() => rig.close());

  it('a scraper that never reads is cut at the send timeout, not before, and probes are answered meanwhile', async () => {
    const stuck = await Promise.all(Array.from({ length: 3 }, () => rig.connect()));
    for (const socket of stuck) {
      // Never read until the timeout has fired: the body (~30 MB) is more than both sides' buffers hold.
      socket.pause();
      socket.write('GET /stats/prometheus HTTP/1.1\r\nHost: pod\r\n\r\n');
    }
    await pollUntil(() => timers.delays(), { what: 'a send timeout on each stuck answer', accept: (delays) => delays.length === 3, timeoutMs: 60_000 });
    assert.equal((await get(rig.server.port, '/healthz/ready')).status, 200);
    assert.deepEqual(timers.delays(), [sendTimeoutMs, sendTimeoutMs, sendTimeoutMs], 'the probe\'s timer went with its answer');
    timers.advance(sendTimeoutMs - 1);
    assert.equal(timers.delays().length, 3, 'not cut before the send timeout');
    timers.advance(1);
    for (const socket of stuck) {
      let received = 0;
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      const closed = once(socket, 'close');
      socket.resume();
      await closed;
      assert.ok(received < bigMetrics.length, `cut short: ${received} of ${bigMetrics.length} bytes`);
    }
  });
});

describe('the status server: its connection slots', () => {
  let rig: StatusRig;
  let checks = 0;
  let answer = () => undefined as void;
  const gate = new Promise<void>((resolve) => (answer = resolve));
  before(async () => {
    const held: StatusDeps = { ...deps, readiness: { check: async () => (checks++, await gate, { ready: true }) } };
    rig = await startStatusRig(held, 'status-slots-');
  });
  after(() => rig.close());

  const open = async () => {
    const socket = await rig.connect();
    const closed = once(socket, 'close').then(() => socket);
    const answered = Promise.race([once(socket, 'data').then(([chunk]) => String(chunk)), closed.then(() => 'closed unanswered')]);
    socket.write('GET /healthz/ready HTTP/1.1\r\nHost: pod\r\n\r\n');
    return { socket, closed, answered };
  };

  it('a connection waiting on its answer keeps its slot; once answered, its slot may go to a newcomer', async () => {
    const { max, reservedForTrusted } = statusConnectionLimits;
    const full = await Promise.all(Array.from({ length: max + reservedForTrusted }, open));
    while (checks < full.length) await new Promise((resolve) => setImmediate(resolve));
    const refused = await open();
    assert.equal(await Promise.race([refused.closed, ...full.map((each) => each.closed)]), refused.socket, 'the newcomer is refused, no waiting one closed');
    answer();
    for (const each of full) assert.match(await each.answered, /^HTTP\/1\.1 200 /);
    const admitted = await open();
    assert.match(await admitted.answered, /^HTTP\/1\.1 200 /);
    assert.ok(await Promise.race(full.map((each) => each.closed)), 'an answered connection made room');
  });
});


describe('the status server streams the merged metrics', () => {
  let rig: StatusRig;
  let server: StatusServer;
  const envoy = { pulled: 0, closed: false };
  const chunk = Buffer.from(`${Array.from({ length: 1024 }, (_, i) => `envoy_streamed_metric{n="${i}"} ${i}`).join('\n')}\n`);
  const envoyBytes = 256 * 2 ** 20;
  before(async () => {
    async function* body() {
      try {
        for (envoy.pulled = 0; envoy.pulled < envoyBytes; envoy.pulled += chunk.length) yield chunk;
      } finally {
        envoy.closed = true;
      }
    }
    const streaming: StatusDeps = { ...deps, agentMetrics: async () => '', envoyMetrics: async () => ({ ok: true, status: 200, body: body() }) };
    rig = await startStatusRig(streaming, 'status-stream-');
    server = rig.server;
  });
  after(() => rig.close());

  it('HEAD of the streamed metrics: headers only, and Envoy\'s body let go of', async () => {
    envoy.closed = false;
    const answer = await new Promise<{ status: number; body: Buffer; encoding?: string }>((resolve, reject) => {
      httpRequest({ host: '127.0.0.1', port: server.port, path: '/stats/prometheus', method: 'HEAD', headers: { 'accept-encoding': 'gzip' } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), encoding: response.headers['content-encoding'] }));
      }).on('error', reject).end();
    });
    assert.deepEqual([answer.status, answer.body.length, answer.encoding], [200, 0, 'gzip']);
    for (const until = Date.now() + 10_000; !envoy.closed && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(envoy.closed, 'Envoy\'s body let go of');
  });

  it('a client that stops reading stops the reading of Envoy\'s body: a few chunks held, never the page; its leaving ends that body', async () => {
    const socket = connect(server.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.pause();
    // Plain: gzip would shrink these repeated lines a thousandfold, and the kernel's buffers would take far more of them.
    socket.write('GET /stats/prometheus HTTP/1.1\r\nHost: pod\r\n\r\n');
    // Wait until the pull stops growing (the buffers of both sides are full), then some more.
    for (let last = -1; envoy.pulled !== last || envoy.pulled === 0; ) {
      last = envoy.pulled;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.ok(envoy.pulled < 16 * 2 ** 20, `Envoy's body read while nobody reads the answer: ${(envoy.pulled / 2 ** 20).toFixed(1)} MiB (the cap is 32)`);
    socket.destroy();
    for (const until = Date.now() + 10_000; !envoy.closed && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(envoy.closed, 'Envoy\'s body let go of');
  });
});

describe('the status server in a recipe\'s stack', () => {
  it('disposing it closes its port and its readiness socket, as close() does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'status-dispose-'));
    try {
      const socketPath = join(dir, 'READINESS');
      let port = 0;
      {
        await using stack = new AsyncDisposableStack();
        const server = stack.use(await startStatusServer({ port: 0, readinessSocketPath: socketPath, deps, logger: silentLogger }));
        assert.equal((await get(server.port, '/healthz/ready')).status, 200);
        port = server.port;
      }
      const probe = connect(port, '127.0.0.1');
      const outcome = await Promise.race([
        once(probe, 'error').then(([error]) => (error as NodeJS.ErrnoException).code),
        once(probe, 'connect').then(() => 'connected'),
      ]);
      probe.destroy();
      assert.equal(outcome, 'ECONNREFUSED');
      assert.equal(existsSync(socketPath), false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
