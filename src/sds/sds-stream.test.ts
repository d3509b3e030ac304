import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../metrics/index.ts';
import { silentLogger } from '../shared/log.ts';
import { encodeVarint } from '../grpc/proto-wire.ts';
import { readResponse } from '../xds/wire.ts';
import { registerSdsMetrics } from './metrics.ts';
import { secretType } from '../xds/type-urls.ts';
import { SdsStream } from './sds-stream.ts';
import { SecretStore, type StoredSecret } from './secret-store.ts';

const len = (field: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([encodeVarint(field * 8 + 2), encodeVarint(bytes.length), bytes]);
};
const request = (names: string[], options: { nonce?: string; error?: string; typeUrl?: string } = {}) => Buffer.concat([
  ...names.map((name) => len(3, name)), len(4, options.typeUrl ?? secretType), len(5, options.nonce ?? ''),
  ...(options.error ? [len(6, len(2, options.error))] : []),
]);
const secret = (serial: string): StoredSecret => ({ material: { kind: 'validation-context', trustedCa: Buffer.from(serial) }, serial, expiresAt: 0, files: [`/certs/${serial}`] });

function rig() {
  const store = new SecretStore();
  const registry = new Registry();
  const metrics = registerSdsMetrics(registry, store, () => 0);
  const sent: Buffer[] = [];
  const held = new Map<string, number>();
  const subscriptions = { acquire: (name: string) => held.set(name, (held.get(name) ?? 0) + 1), release: (name: string) => held.set(name, held.get(name)! - 1) };
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
