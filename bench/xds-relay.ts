// Push-to-ACK latency through the xDS relay vs a direct connection, and the
// relay's memory while its client is stalled during 50 MB pushes.
// Run: .tools/bin/node bench/xds-relay.ts [--quick]
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { execa } from 'execa';
import { adsMethods } from '../src/xds/relay.ts';
import { encodeVarint, readRequest } from '../src/xds/wire.ts';
import { AdsTestClient, sotwRequest } from '../test/support/ads-client.ts';

const typeUrl = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const quick = process.argv.includes('--quick');
const sizes = [
  { label: '1 KB', bytes: 1_000, samples: quick ? 50 : 300 },
  { label: '100 KB', bytes: 100_000, samples: quick ? 20 : 100 },
  { label: '1 MB', bytes: 1_000_000, samples: quick ? 10 : 40 },
  { label: '10 MB', bytes: 10_000_000, samples: quick ? 5 : 15 },
  { label: '50 MB', bytes: 50_000_000, samples: quick ? 3 : 7 },
];

const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};

/** `total` bytes of ~1 KB Any resources: a big push is many resources, as in a mesh. */
function resourceBlock(total: number): Buffer {
  const one = len(2, Buffer.concat([len(1, typeUrl), len(2, Buffer.alloc(Math.min(total, 1000) - 70, 0x61))]));
  return Buffer.concat(Array.from({ length: Math.max(1, Math.round(total / one.length)) }, () => one));
}

/** A raw-bytes ADS server: pushes one response at a time and times its ACK. */
class ControlPlane {
  readonly server = new Server({ 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 });
  #stream: ServerDuplexStream<Buffer, Buffer> | undefined;
  #waiting: { nonce: string; start: number; resolve: (ms: number) => void } | undefined;
  #connected: (() => void) | undefined;
  #nonce = 0;
  port = 0;

  async start(): Promise<void> {
    const identity = (message: Buffer) => message;
    const definition = { path: adsMethods.sotw, requestStream: true, responseStream: true, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity };
    this.server.addService({ StreamAggregatedResources: definition }, { StreamAggregatedResources: (stream: ServerDuplexStream<Buffer, Buffer>) => this.#serve(stream) });
    this.port = await new Promise((resolve, reject) => this.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))));
  }

  #serve(stream: ServerDuplexStream<Buffer, Buffer>): void {
    this.#stream = stream;
    stream.on('error', () => undefined);
    stream.on('data', (request: Buffer) => {
      const fields = readRequest(request, 'sotw');
      if (fields.nonce === '') return this.#connected?.();
      if (this.#waiting && fields.nonce === this.#waiting.nonce) this.#waiting.resolve(performance.now() - this.#waiting.start);
    });
  }

  connected(): Promise<void> {
    return new Promise((resolve) => (this.#connected = resolve));
  }

  /** Pushes `block` as a new version; resolves with ms until the ACK. */
  push(block: Buffer, waitForAck = true): Promise<number> {
    const nonce = String(++this.#nonce);
    const response = Buffer.concat([len(1, `v${nonce}`), block, len(4, typeUrl), len(5, nonce)]);
    return new Promise((resolve) => {
      if (waitForAck) this.#waiting = { nonce, start: performance.now(), resolve };
      this.#stream!.write(response);
      if (!waitForAck) resolve(0);
    });
  }
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function measure(plane: ControlPlane, target: string, block: Buffer, samples: number): Promise<number[]> {
  const connected = plane.connected();
  const client = new AdsTestClient(target);
  client.send(sotwRequest({ typeUrl, nodeId: 'bench~127.0.0.1~bench~local' }));
  await connected;
  await plane.push(block); // warm-up, not counted
  const times: number[] = [];
  for (let i = 0; i < samples; i++) times.push(await plane.push(block));
  client.close();
  return times;
}

/** Relay RSS while the client reads nothing and three 50 MB responses are pushed. */
async function stalledMemory(plane: ControlPlane, target: string, pid: number): Promise<{ before: number; peak: number }> {
  const connected = plane.connected();
  const client = new AdsTestClient(target);
  client.autoAck = false;
  client.send(sotwRequest({ typeUrl, nodeId: 'bench~127.0.0.1~bench~local' }));
  await connected;
  client.stream.pause();
  const before = rssMiB(pid);
  let peak = before;
  const block = resourceBlock(50_000_000);
  for (let i = 0; i < 3; i++) await plane.push(block, false);
  for (let i = 0; i < 60; i++) {
    peak = Math.max(peak, rssMiB(pid));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  client.close();
  return { before, peak };
}

/** The relay in a fresh process, so its memory figures are its own. */
async function startRelayChild(socket: string, port: number) {
  const child = execa(process.execPath, [new URL('./xds-relay-child.ts', import.meta.url).pathname, socket, String(port)], { buffer: false, reject: false });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return { pid: child.pid!, stop: async () => (child.kill('SIGTERM'), await child) };
}

const dir = await mkdtemp(join(tmpdir(), 'xds-bench-'));
const plane = new ControlPlane();
await plane.start();
const socket = join(dir, 'XDS');
try {
  const relay = await startRelayChild(socket, plane.port);
  console.log(`xDS push-to-ACK, grpc-js ADS client that ACKs; relay in its own process; ms${quick ? ' (quick)' : ''}`);
  console.log('size    | direct p50 | direct p99 | relay p50 | relay p99 | ratio p50 | ratio p99 | added p99');
  for (const size of sizes) {
    const block = resourceBlock(size.bytes);
    const direct = await measure(plane, `127.0.0.1:${plane.port}`, block, size.samples);
    const relayed = await measure(plane, `unix://${socket}`, block, size.samples);
    const [d50, d99, r50, r99] = [percentile(direct, 50), percentile(direct, 99), percentile(relayed, 50), percentile(relayed, 99)];
    const cells = [d50, d99, r50, r99].map((value) => value.toFixed(2).padStart(9));
    console.log(`${size.label.padEnd(7)} | ${cells.join(' | ')} | ${(r50 / d50).toFixed(2).padStart(8)}× | ${(r99 / d99).toFixed(2).padStart(8)}× | ${(r99 - d99).toFixed(2)} ms`);
  }
  await relay.stop();
  const fresh = await startRelayChild(socket, plane.port);
  const memory = await stalledMemory(plane, `unix://${socket}`, fresh.pid);
  await fresh.stop();
  console.log(`relay RSS with a stalled client, 3 × 50 MB pushed: ${memory.before.toFixed(0)} MiB before, ${memory.peak.toFixed(0)} MiB peak (+${(memory.peak - memory.before).toFixed(0)} MiB = ${((memory.peak - memory.before) / 47.7).toFixed(2)} × one response)`);
} finally {
  plane.server.forceShutdown();
  await rm(dir, { recursive: true, force: true });
}
