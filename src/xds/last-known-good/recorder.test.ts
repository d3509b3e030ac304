import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { lenField } from '../../grpc/proto-wire.ts';
import { FakeClock } from '../../shared/clock.ts';
import type { RequestFields, ResponseFields, XdsMode } from '../../discovery/wire.ts';
import { LastKnownGoodConfig } from './config.ts';
import { LastKnownGoodRecorder } from './recorder.ts';

const eds = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const ask = (typeUrl: string, fields: Partial<RequestFields> = {}): RequestFields => ({
  typeUrl,
  versionInfo: '',
  nonce: '',
  error: undefined,
  names: [],
  node: undefined,
  unsubscribe: [],
  initialVersions: 0,
  ...fields,
});
const fields = (typeUrl: string, nonce: string): ResponseFields => ({ typeUrl, version: `v-${nonce}`, nonce, resources: 1, removed: 0 });

function rig(mode: XdsMode, pendingBytes: number) {
  const lines: { level: number; msg: string; type?: string; limitBytes?: number; err?: unknown }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const lastKnownGood = new LastKnownGoodConfig();
  const recorder = new LastKnownGoodRecorder({ mode, lastKnownGood, clock: new FakeClock(42), logger, pendingBytes });
  /** A response as the relay passes it: its length first, then its chunks, then its fields. */
  const relay = (bytes: Buffer, response: ResponseFields) => {
    recorder.begin(bytes.length);
    recorder.data(bytes);
    recorder.end(response);
  };
  return { lines, lastKnownGood, recorder, relay };
}

describe('LastKnownGoodRecorder on hostile or unkeepable responses', () => {
  it('an ACKed Delta response whose resources are not protobuf forgets its type, in one line', () => {
    const { lines, lastKnownGood, recorder, relay } = rig('delta', 1 << 20);
    lastKnownGood.applyDelta(eds, { version: 'old', resources: [], removed: [], reset: true }, 0);
    recorder.request(ask(eds, { initialVersions: 1 }));
    relay(Buffer.concat([lenField(2, Buffer.from([0x0a, 0x7f])), lenField(4, eds)]), fields(eds, 'n1'));
    recorder.request(ask(eds, { nonce: 'n1' }));
    assert.equal(lastKnownGood.get('delta', eds), undefined);
    assert.deepEqual(lines.map((line) => [line.level, line.msg, line.type]), [[40, 'cannot read an ACKed Delta response; its type is not kept', eds]]);
    assert.ok(lines[0]!.err);
  });

  it('a budget of 0 keeps nothing and holds nothing, and says nothing', () => {
    const { lines, lastKnownGood, recorder, relay } = rig('sotw', 0);
    relay(Buffer.concat([lenField(1, 'v'), lenField(4, cds), lenField(5, 'n1')]), fields(cds, 'n1'));
    assert.equal(recorder.pendingBytes, 0);
    recorder.request(ask(cds, { nonce: 'n1' }));
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
    assert.deepEqual(lines, []);
  });

  it('a response over the budget is not held: its type is forgotten with the budget in the line', () => {
    const { lines, lastKnownGood, recorder, relay } = rig('sotw', 16);
    lastKnownGood.keepSotw(cds, 'old', [Buffer.from('x')], 0);
    relay(Buffer.alloc(17), fields(cds, 'n1'));
    assert.equal(recorder.pendingBytes, 0);
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
    assert.deepEqual(
      lines.map((line) => [line.msg, line.type, line.limitBytes]),
      [['a response too large to hold until its ACK; its type is not kept', cds, 16]],
    );
    relay(Buffer.alloc(16), fields(cds, 'n2'));
    assert.equal(recorder.pendingBytes, 16, 'exactly the budget is held');
    recorder.request(ask(cds, { nonce: 'n2' }));
    assert.equal(lastKnownGood.get('sotw', cds)?.version, 'v-n2');
    assert.equal(lastKnownGood.get('sotw', cds)?.ackedAt, 42);
  });

  it('an ACK naming a nonce never sent, or a request without a nonce, keeps nothing but the subscription', () => {
    const { lastKnownGood, recorder, relay } = rig('sotw', 1 << 20);
    relay(Buffer.from('r'), fields(cds, 'n1'));
    recorder.request(ask(cds, { nonce: 'forged' }));
    recorder.request(ask(cds, { names: ['a'] }));
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
    assert.equal(recorder.pendingBytes, 1);
    assert.equal(lastKnownGood.covers('sotw'), false, 'asked for, nothing kept');
  });

  it('Delta: only the first request of a type decides whether Envoy starts afresh', () => {
    const { lastKnownGood, recorder, relay } = rig('delta', 1 << 20);
    lastKnownGood.applyDelta(eds, { version: 'old', resources: [{ name: 'kept', version: 'old', bytes: Buffer.from('k') }], removed: [], reset: true }, 0);
    recorder.request(ask(eds, { initialVersions: 1 }));
    recorder.request(ask(eds, { initialVersions: 0, names: ['b'] }));
    const resource = Buffer.concat([lenField(1, 'v1'), lenField(3, 'a')]);
    relay(Buffer.concat([lenField(2, resource), lenField(4, eds), lenField(5, 'n1')]), fields(eds, 'n1'));
    recorder.request(ask(eds, { nonce: 'n1' }));
    assert.deepEqual([...lastKnownGood.get('delta', eds)!.resources!.keys()].sort(), ['a', 'kept']);
  });
});

describe('LastKnownGoodRecorder after it lost track of a type', () => {
  const resource = (name: string) => lenField(2, Buffer.concat([lenField(1, 'v'), lenField(3, name)]));
  const delta = (nonce: string, names: string[], pad = 0) =>
    Buffer.concat([...names.map(resource), lenField(4, eds), lenField(5, nonce), ...(pad ? [lenField(9, Buffer.alloc(pad))] : [])]);

  it('Delta: a response too large to hold leaves the type unkept for the rest of the stream (later changes build on what it missed)', () => {
    const { lastKnownGood, recorder, relay } = rig('delta', 200);
    recorder.request(ask(eds, { initialVersions: 0 }));
    relay(delta('n1', ['a']), fields(eds, 'n1'));
    recorder.request(ask(eds, { nonce: 'n1' }));
    assert.deepEqual([...lastKnownGood.get('delta', eds)!.resources!.keys()], ['a']);
    relay(delta('n2', ['b'], 300), fields(eds, 'n2'));
    assert.equal(lastKnownGood.get('delta', eds), undefined, 'lost: forgotten');
    relay(delta('n3', ['c']), fields(eds, 'n3'));
    recorder.request(ask(eds, { nonce: 'n2' }));
    recorder.request(ask(eds, { nonce: 'n3' }));
    assert.equal(lastKnownGood.get('delta', eds), undefined, 'c alone is not what Envoy holds (a, b, c)');
  });

  it('SotW: a response still waiting when a newer one was too large is not kept when Envoy ACKs it (Envoy moved on)', () => {
    const { lastKnownGood, recorder, relay } = rig('sotw', 64);
    relay(Buffer.alloc(10), fields(cds, 'n1'));
    relay(Buffer.alloc(65), fields(cds, 'n2'));
    recorder.request(ask(cds, { nonce: 'n1' }));
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
    relay(Buffer.alloc(10), fields(cds, 'n3'));
    recorder.request(ask(cds, { nonce: 'n3' }));
    assert.equal(lastKnownGood.get('sotw', cds)?.version, 'v-n3', 'the next whole response is kept again');
  });

  it('Delta: two responses of a type waiting are both kept once ACKed in order', () => {
    const { lastKnownGood, recorder, relay } = rig('delta', 1 << 20);
    recorder.request(ask(eds, { initialVersions: 0 }));
    relay(delta('n1', ['a']), fields(eds, 'n1'));
    relay(delta('n2', ['b']), fields(eds, 'n2'));
    recorder.request(ask(eds, { nonce: 'n1' }));
    recorder.request(ask(eds, { nonce: 'n2' }));
    assert.deepEqual([...lastKnownGood.get('delta', eds)!.resources!.keys()].sort(), ['a', 'b']);
  });
});

describe('LastKnownGoodRecorder: losses touch only their own type', () => {
  it('SotW: a too-large response of one type leaves another type\'s waiting response to be kept', () => {
    const { lastKnownGood, recorder, relay } = rig('sotw', 64);
    relay(Buffer.alloc(10), fields(cds, 'n1'));
    relay(Buffer.alloc(65), fields(eds, 'n2'));
    recorder.request(ask(cds, { nonce: 'n1' }));
    assert.equal(lastKnownGood.get('sotw', cds)?.version, 'v-n1');
  });

  it('Delta: past the budget the oldest response is dropped, its type forgotten with a line', () => {
    const { lines, lastKnownGood, recorder, relay } = rig('delta', 30);
    lastKnownGood.applyDelta(cds, { version: 'old', resources: [], removed: [], reset: true }, 0);
    relay(Buffer.alloc(20), fields(cds, 'n1'));
    relay(Buffer.alloc(20), fields(eds, 'n2'));
    assert.equal(lastKnownGood.get('delta', cds), undefined);
    assert.deepEqual(lines.map((line) => [line.msg, line.type]), [['a response too large to hold until its ACK; its type is not kept', cds]]);
    assert.equal(recorder.pendingBytes, 20);
  });

  it('a request without a nonce settles nothing, even a response that came without one', () => {
    const { lastKnownGood, recorder, relay } = rig('sotw', 1 << 20);
    relay(Buffer.from('r'), fields(cds, ''));
    recorder.request(ask(cds));
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
    assert.equal(recorder.pendingBytes, 1);
  });
});
