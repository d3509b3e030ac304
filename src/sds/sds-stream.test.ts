import assert from 'node:assert/strict';
import { test } from 'node:test';
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
  const stream = new SdsStream({ id: 1, store, subscriptions, metrics, send: (message) => (sent.push(message), true), logger: silentLogger, now: () => 0 });
  store.onChange((name) => stream.holds(name) && stream.push());
  const last = () => readResponse(sent.at(-1)!, 'sotw');
  return { store, registry, sent, held, stream, last };
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
