import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as http2Connect } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, credentials, status, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import pino from 'pino';
import { sotwRequest } from '../../test/support/ads-client.ts';
import { Registry } from '../metrics/index.ts';
import { registerSdsMetrics } from './metrics.ts';
import { maxSdsConnections, maxSdsStreamsPerConnection, SdsServer } from './sds-server.ts';
import { maxNamesPerStream } from './sds-stream.ts';
import { secretType } from '../discovery/type-urls.ts';
import { SecretStore } from './secret-store.ts';

const service = '/envoy.service.secret.v3.SecretDiscoveryService';
const secret = (n: number) => ({
  material: { kind: 'validation-context' as const, trustedCa: Buffer.from(`root ${n}`) },
  serial: String(n),
  expiresAt: 0,
  files: [],
});

/** Waits on a condition the server reaches through real sockets; bounded, so a failure is a message, not a hang. */
async function until(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A grpc-js StreamSecrets client counting responses; each one is ACKed. */
function open(socketPath: string, names: string[]) {
  const client = new Client(`unix:${socketPath}`, credentials.createInsecure());
  const bytes = (message: Buffer) => message;
  const stream: ClientDuplexStream<Buffer, Buffer> = client.makeBidiStreamRequest(`${service}/StreamSecrets`, bytes, bytes);
  const state = { responses: 0, ended: undefined as ServiceError | undefined, done: false };
  stream.on('data', () => {
    state.responses++;
    stream.write(sotwRequest({ typeUrl: secretType, names, nonce: String(state.responses) }));
  });
  stream.on('error', (error: ServiceError) => ((state.ended = error), (state.done = true)));
  stream.on('end', () => (state.done = true));
  stream.write(sotwRequest({ typeUrl: secretType, nodeId: 'sidecar~1~x~y', names }));
  return { state, close: () => (stream.cancel(), client.close()) };
}

describe('SdsServer on grpc-js: every change reaches the stream; connections, streams and names are capped', () => {
  let dir: string;
  let socketPath: string;
  let server: SdsServer;
  const store = new SecretStore();
  const lines: Array<{ msg: string; level: number }> = [];
  const acquired: string[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sds-server-'));
    socketPath = join(dir, 'sds.sock');
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const metrics = registerSdsMetrics(new Registry(), store, () => 0);
    const subscriptions = { acquire: (name: string) => void acquired.push(name), release: () => undefined };
    server = new SdsServer({ socketPath, store, subscriptions, metrics, logger, now: () => 0, idleMs: 500 });
    await server.start();
  });
  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a grpc-js client sees every change of the secret it holds', async () => {
    store.put('ROOTCA', secret(0));
    const client = open(socketPath, ['ROOTCA']);
    try {
      await until('the first push', () => client.state.responses === 1);
      for (let n = 1; n <= 20; n++) {
        store.put('ROOTCA', secret(n));
        await until(`push ${n + 1}`, () => client.state.responses === n + 1);
      }
    } finally {
      client.close();
    }
  });

  it(`at ${maxSdsConnections} connections new ones are closed, one line says so, and the open stream still gets pushes`, async () => {
    const envoy = open(socketPath, ['ROOTCA']);
    const idle: Socket[] = [];
    try {
      await until('Envoy\'s stream', () => envoy.state.responses === 1);
      // One connection is Envoy's; fill the rest and go past the cap.
      for (let i = 0; i < maxSdsConnections + 10; i++) idle.push(connect(socketPath).on('error', () => undefined).resume());
      const closedAtOnce = () => idle.filter((socket) => socket.closed).length;
      await until('the connections past the cap closed', () => closedAtOnce() >= 11);
      assert.ok(closedAtOnce() < 20, `only those past the cap: ${closedAtOnce()}`);
      assert.equal(lines.filter((line) => line.msg.includes('connection cap')).length, 1, 'one line, not one per refused connection');
      store.put('ROOTCA', secret(100));
      await until('the push at the cap', () => envoy.state.responses === 2);
      // Connections that never speak are closed after idleMs, and so is a grpc-js
      // connection with no call open; Envoy's, with its stream, stays.
      await until('the silent connections closed', () => idle.every((socket) => socket.closed), 10_000);
      // A subchannel of its own: grpc-js would otherwise share the connection of the client above.
      const callless = new Client(`unix:${socketPath}`, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
      await new Promise<void>((resolve, reject) => callless.waitForReady(Date.now() + 5000, (error) => (error ? reject(error) : resolve())));
      await until('the connection without a call closed', () => String(callless.getChannel().getConnectivityState(false)) !== '2', 10_000);
      callless.close();
      store.put('ROOTCA', secret(101));
      await until('the push after', () => envoy.state.responses === 3);
      assert.equal(envoy.state.done, false);
    } finally {
      for (const socket of idle) socket.destroy();
      envoy.close();
    }
  });

  it(`a request naming more than ${maxNamesPerStream} secrets ends its stream with RESOURCE_EXHAUSTED, watching none, in one line`, async () => {
    const before = { acquired: acquired.length, lines: lines.length };
    const names = Array.from({ length: 5000 }, (_, i) => `file-root:/tmp/x${i}.pem`);
    const client = open(socketPath, names);
    try {
      await until('the stream to end', () => client.state.done);
      assert.equal(client.state.ended?.code, status.RESOURCE_EXHAUSTED);
      assert.equal(acquired.length, before.acquired, 'no watch started');
      assert.equal(lines.slice(before.lines).filter((line) => line.level >= 40).length, 1);
    } finally {
      client.close();
    }
  });

  it(`one connection holds at most ${maxSdsStreamsPerConnection} streams at once`, async () => {
    const session = http2Connect('http://localhost', { createConnection: () => connect(socketPath) });
    session.on('error', () => undefined);
    try {
      const request = sotwRequest({ typeUrl: secretType, nodeId: 'sidecar~1~x~y', names: ['ROOTCA'] });
      const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), request]);
      framed.writeUInt32BE(request.length, 1);
      for (let i = 0; i < maxSdsStreamsPerConnection + 8; i++) {
        const stream = session.request({ ':method': 'POST', ':path': `${service}/StreamSecrets`, 'content-type': 'application/grpc', te: 'trailers' });
        stream.on('error', () => undefined).resume();
        stream.write(framed);
      }
      const held = () => (server.debug() as { streams: unknown[] }).streams.length;
      await until('the streams to open', () => held() >= maxSdsStreamsPerConnection);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(held(), maxSdsStreamsPerConnection);
    } finally {
      session.destroy();
    }
  });

  it('Delta and Fetch answer UNIMPLEMENTED', async () => {
    const client = new Client(`unix:${socketPath}`, credentials.createInsecure());
    try {
      const bytes = (message: Buffer) => message;
      const code = await new Promise<number>((resolve) =>
        client.makeUnaryRequest(`${service}/FetchSecrets`, bytes, bytes, Buffer.alloc(0), (error) => resolve(error?.code ?? 0)),
      );
      assert.equal(code, status.UNIMPLEMENTED);
    } finally {
      client.close();
    }
  });
});

it('grpc-js is loaded only when a connection comes; that connection waits for it, and is then served', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sds-server-late-'));
  const socketPath = join(dir, 'sds.sock');
  const store = new SecretStore();
  store.put('ROOTCA', secret(1));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const server = new SdsServer({
    socketPath, store, subscriptions: { acquire: () => undefined, release: () => undefined },
    metrics: registerSdsMetrics(new Registry(), store, () => 0), logger: pino({ level: 'silent' }), now: () => 0,
    loadGrpc: async () => (loads++, await gate, await import('../grpc/load.ts').then((module) => module.loadGrpc())),
  });
  let loads = 0;
  await server.start();
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(loads, 0, 'listening, and grpc-js not loaded: nobody connected');
  const client = open(socketPath, ['ROOTCA']);
  try {
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(client.state.responses, 0, 'nothing before grpc-js is there');
    assert.equal(loads, 1);
    release();
    await until('the first push', () => client.state.responses === 1);
    assert.equal(client.state.done, false);
  } finally {
    client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
