import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { Registry } from '../metrics/index.ts';
import { silentLogger } from '../shared/log.ts';
import { encodeVarint } from '../grpc/proto-wire.ts';
import { readResponse } from '../discovery/wire.ts';
import { registerSdsMetrics } from './metrics.ts';
import { secretType } from '../discovery/type-urls.ts';
import { maxNamesPerStream, SdsStream } from './sds-stream.ts';
import { SecretStore, type StoredSecret } from './secret-store.ts';

const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};
const request = (names: string[], options: { nonce?: string; error?: string; typeUrl?: string } = {}) => Buffer.concat([
  ...names.map((name) => len(3, name)), len(4, options.typeUrl ?? secretType), len(5, options.nonce ?? ''),
  ...(options.error ? [len(6, len(2, options.error))] : []),
]);
const secret = (serial: string): StoredSecret => ({
  material: { kind: 'validation-context', trustedCa: Buffer.from(serial) },
  serial,
  expiresAt: 0,
  files: [`/certs/${serial}`],
});

function rig() {
  const store = new SecretStore();
  const registry = new Registry();
  const metrics = registerSdsMetrics(registry, store, () => 0);
  const sent: Buffer[] = [];
  const held = new Map<string, number>();
  const subscriptions = {
    acquire: (name: string) => held.set(name, (held.get(name) ?? 0) + 1),
    release: (name: string) => held.set(name, held.get(name)! - 1),
  };
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const stream = new SdsStream({ id: 1, store, subscriptions, metrics, send: (message) => (sent.push(message), true), logger, now: () => 0 });
  store.onChange((name) => stream.holds(name) && stream.push());
  const last = () => readResponse(sent.at(-1)!, 'sotw');
  return { store, registry, sent, held, stream, last, lines };
}

test('SdsStream: sends what it can, waits for the rest, ACKs send nothing', () => {
  const { store, sent, stream, last } = rig();
  store.put('ROOTCA', secret('A'));
  stream.request(request(['default', 'ROOTCA']));
  assert.equal(sent.length, 1);
  assert.equal(last().resources, 1, 'only ROOTCA is available');
  stream.request(request(['default', 'ROOTCA'], { nonce: last().nonce }));
  assert.equal(sent.length, 1, 'an ACK is not answered');
  store.put('default', secret('B'));
  assert.equal(sent.length, 2);
  assert.equal(last().resources, 2, 'State of the World: every held name');
  assert.deepEqual(stream.debug().waiting, []);
});

test('SdsStream: pushes only real changes of names it holds', () => {
  const { store, sent, stream } = rig();
  store.put('default', secret('A'));
  stream.request(request(['default']));
  store.put('default', secret('A'));
  assert.equal(sent.length, 1, 'same bytes again: no push');
  store.put('other', secret('C'));
  assert.equal(sent.length, 1, 'a name the stream does not hold');
  store.put('default', secret('B'));
  assert.equal(sent.length, 2);
  assert.equal(stream.debug().secrets[0]!.serial, 'B');
});

test('SdsStream: subscriptions follow the names; closing releases them', () => {
  const { held, stream } = rig();
  stream.request(request(['a', 'b']));
  stream.request(request(['b', 'c']));
  assert.deepEqual(Object.fromEntries(held), { a: 0, b: 1, c: 1 });
  stream.close();
  assert.deepEqual(Object.fromEntries(held), { a: 0, b: 0, c: 0 });
});

test('SdsStream: a NACK of the latest response is counted; a wrong type is refused', async () => {
  const { store, registry, stream, last } = rig();
  store.put('default', secret('A'));
  stream.request(request(['default']));
  stream.request(request(['default'], { nonce: last().nonce, error: 'bad key' }));
  stream.request(request(['default'], { nonce: 'stale', error: 'old news' }));
  assert.match(await registry.metrics(), /istio_agent_sds_errors_total\{reason="nack"\} 1/);
  assert.throws(() => stream.request(request(['default'], { typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster' })), /is not/);
});

test('SdsStream: the reason a name waits is shown', () => {
  const { store, stream } = rig();
  store.setProblem('file-root:/x.pem', '/x.pem does not exist');
  stream.request(request(['file-root:/x.pem', 'default']));
  assert.deepEqual(stream.debug().waiting, [{ name: 'file-root:/x.pem', reason: '/x.pem does not exist' }, { name: 'default', reason: 'not available yet' }]);
});

test('SdsStream: hostile requests are refused before any name is watched', () => {
  const rows: { name: string; bytes: Buffer; error: RegExp }[] = [
    { name: 'bytes that are not protobuf', bytes: Buffer.from([0x1a, 0x7f, 0x61]), error: /WireError|truncated/ },
    { name: 'a name with the wrong wire type', bytes: Buffer.from([0x18, 0x01]), error: /field 3 has wire type 0, expected length-delimited/ },
    {
      name: `${maxNamesPerStream + 1} names`,
      bytes: request(Array.from({ length: maxNamesPerStream + 1 }, (_, index) => `file-cert:/n${index}`)),
      error: /^TooManyNames: 257 names; a stream may hold at most 256$/,
    },
    {
      name: 'another type',
      bytes: request(['default'], { typeUrl: 'x' }),
      error: /^BadSdsRequest: type_url x is not type\.googleapis\.com\/envoy\.extensions\.transport_sockets\.tls\.v3\.Secret$/,
    },
  ];
  for (const row of rows) {
    const { held, sent, stream } = rig();
    assert.throws(() => stream.request(row.bytes), (error: Error) => row.error.test(`${error.name}: ${error.message}`), row.name);
    assert.equal(held.size, 0, `${row.name}: nothing watched`);
    assert.equal(sent.length, 0, row.name);
  }
});

test(`SdsStream: ${maxNamesPerStream} names are served, the same name repeated counts once, no type_url is Secret`, () => {
  const { held, stream } = rig();
  const names = Array.from({ length: maxNamesPerStream }, (_, index) => `n${index}`);
  stream.request(Buffer.concat([...[...names, ...names].map((name) => len(3, name)), len(5, '')]));
  assert.equal(held.size, maxNamesPerStream);
  assert.ok([...held.values()].every((count) => count === 1), 'each name acquired once');
});

test('SdsStream: nothing is pushed while the store serves none of its names, and a refused send is sent again', () => {
  const { store, sent, stream } = rig();
  stream.request(request(['default']));
  assert.equal(sent.length, 0);
  let accept = false;
  const refusing = new SdsStream({
    id: 2,
    store,
    subscriptions: { acquire: () => undefined, release: () => undefined },
    metrics: registerSdsMetrics(new Registry(), store, () => 0),
    send: () => accept,
    logger: silentLogger,
    now: () => 0,
  });
  store.put('default', secret('A'));
  refusing.request(request(['default']));
  assert.deepEqual(refusing.debug().secrets, [], 'a send the stream refused is not counted as sent');
  accept = true;
  refusing.push();
  assert.deepEqual(refusing.debug().secrets.map((held) => held.serial), ['A']);
  assert.equal(refusing.debug().version, 2);
});

test('SdsStream: a name dropped from the request is sent again when asked for again', () => {
  const { store, sent, stream, last } = rig();
  store.put('a', secret('A'));
  store.put('b', secret('B'));
  stream.request(request(['a', 'b']));
  stream.request(request(['a']));
  assert.equal(sent.length, 1, 'a dropped name needs no response: what was sent for a is unchanged');
  stream.request(request(['a', 'b']));
  assert.equal(sent.length, 2);
  assert.equal(last().resources, 2);
  assert.deepEqual(stream.debug().secrets.map((held) => held.name).sort(), ['a', 'b']);
  assert.equal(stream.debug().since, new Date(0).toISOString());
  assert.equal(stream.id, 1);
});

test('SdsStream: each push is logged with its version and serials, counted per resource, and has a nonce of its own', async () => {
  const { store, registry, sent, stream, last, lines } = rig();
  store.put('a', secret('A'));
  store.put('b', secret('B'));
  stream.request(request(['a', 'b']));
  assert.deepEqual({ version: last().version, nonce: last().nonce }, { version: '1', nonce: '1-1' });
  store.put('b', secret('B2'));
  assert.equal(sent.length, 2, 'one of two names changed: pushed');
  assert.deepEqual({ version: last().version, nonce: last().nonce, resources: last().resources }, { version: '2', nonce: '1-2', resources: 2 });
  assert.deepEqual(
    lines.map(({ level, msg, version, secrets }) => ({ level, msg, version, secrets })),
    [
      { level: 30, msg: 'pushed secrets', version: 1, secrets: [{ name: 'a', serial: 'A' }, { name: 'b', serial: 'B' }] },
      { level: 30, msg: 'pushed secrets', version: 2, secrets: [{ name: 'a', serial: 'A' }, { name: 'b', serial: 'B2' }] },
    ],
  );
  const text = await registry.metrics();
  assert.match(text, /istio_agent_sds_pushes_total\{resource="a"\} 2/);
  assert.match(text, /istio_agent_sds_pushes_total\{resource="b"\} 2/);
});

test('SdsStream: a name the store lost is left out of the next response and waits; when none is left nothing is sent', () => {
  const { store, sent, stream, last } = rig();
  store.put('a', secret('A'));
  store.put('b', secret('B'));
  stream.request(request(['a', 'b']));
  store.remove('b', 'b.pem does not exist');
  stream.request(request(['a', 'b'], { nonce: last().nonce }));
  assert.equal(sent.length, 2, 'fewer names served: a new response');
  assert.equal(last().resources, 1);
  assert.deepEqual(stream.debug().waiting, [{ name: 'b', reason: 'b.pem does not exist' }]);
  stream.request(request(['a', 'b'], { nonce: last().nonce }));
  assert.equal(sent.length, 2, 'the ACK of it is not answered');
  store.remove('a', 'a.pem does not exist');
  stream.request(request(['a', 'b'], { nonce: last().nonce }));
  assert.equal(sent.length, 2, 'an empty response would take every secret away: none is sent');
});

test('SdsStream: a NACK is logged with its nonce and error and counted once, only for the latest response', async () => {
  const { store, registry, stream, last, lines } = rig();
  const nacks = async () => /istio_agent_sds_errors_total\{reason="nack"\} (\d+)/.exec(await registry.metrics())?.[1] ?? '0';
  store.put('default', secret('A'));
  stream.request(request(['default']));
  const latest = last().nonce;
  stream.request(request(['default'], { nonce: 'stale', error: 'old news' }));
  assert.equal(await nacks(), '0', 'a NACK of an older response');
  stream.request(request(['default'], { nonce: latest, error: 'bad key' }));
  assert.equal(await nacks(), '1');
  const warned = lines.filter((line) => line.level === 40).map(({ msg, nonce, error }) => ({ msg, nonce, error }));
  assert.deepEqual(warned, [{ msg: 'Envoy rejected the secrets it was sent', nonce: latest, error: 'bad key' }]);
});

test('SdsStream: an error on the first request, before any response (no nonce yet), is counted as a NACK', async () => {
  const { registry, stream } = rig();
  stream.request(request(['default'], { error: 'rejected on the previous stream' }));
  assert.match(await registry.metrics(), /istio_agent_sds_errors_total\{reason="nack"\} 1/);
});

test('SdsStream: a closed stream holds nothing: store changes send nothing, nothing waits', () => {
  const { store, sent, stream } = rig();
  store.put('default', secret('A'));
  stream.request(request(['default', 'ROOTCA']));
  stream.close();
  assert.equal(stream.holds('default'), false);
  store.put('default', secret('B'));
  assert.equal(sent.length, 1);
  assert.deepEqual(stream.debug().waiting, []);
});
