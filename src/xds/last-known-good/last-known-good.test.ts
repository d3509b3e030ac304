import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../shared/clock.ts';
import { silentLogger } from '../../shared/log.ts';
import { LastKnownGoodConfig } from './config.ts';
import { LastKnownGoodRecorder } from './recorder.ts';
import { LastKnownGoodAnswers } from './serve.ts';
import { deltaResponse, readDeltaChanges } from './wire.ts';
import { lenField } from '../../grpc/proto-wire.ts';
import { readResponse, type RequestFields, type XdsMode } from '../../discovery/wire.ts';

const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const eds = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
const sotwResponse = (version: string, nonce: string, resources: string[]) =>
  Buffer.concat([lenField(1, version), ...resources.map((body) => lenField(2, body)), lenField(4, cds), lenField(5, nonce)]);
/** A Delta Resource: version 1, name 3, the body as resource (2). */
const resource = (name: string, version: string) => Buffer.concat([lenField(1, version), lenField(2, `body of ${name}`), lenField(3, name)]);
const deltaMessage = (typeUrl: string, version: string, nonce: string, names: string[], removed: string[] = []) =>
  Buffer.concat([
    deltaResponse({ typeUrl, version, nonce, resources: names.map((name) => resource(name, version)) }),
    ...removed.map((name) => lenField(6, name)),
  ]);
const request = (typeUrl: string, fields: Partial<RequestFields> = {}): RequestFields =>
  ({ typeUrl, versionInfo: '', nonce: '', error: undefined, names: [], node: undefined, unsubscribe: [], initialVersions: 0, ...fields });

/** A recorder fed whole responses in two chunks each, as the relay feeds it. */
function record(mode: XdsMode, pendingBytes = 1 << 20) {
  const lastKnownGood = new LastKnownGoodConfig();
  const clock = new FakeClock(1_000);
  const recorder = new LastKnownGoodRecorder({ mode, lastKnownGood, clock, logger: silentLogger, pendingBytes });
  const relay = (message: Buffer) => {
    recorder.begin(message.length);
    recorder.data(message.subarray(0, 3));
    recorder.data(message.subarray(3));
    recorder.end(readResponse(message, mode));
  };
  return { lastKnownGood, recorder, relay };
}

const names = (lastKnownGood: LastKnownGoodConfig, typeUrl: string) => [...lastKnownGood.get('delta', typeUrl)!.resources!.keys()].sort();

describe('LastKnownGoodRecorder: only what Envoy ACKed is kept', () => {
  it('SotW: an ACKed response is kept whole; a NACKed one after it is not', () => {
    const { lastKnownGood, recorder, relay } = record('sotw');
    const first = sotwResponse('v1', 'n1', ['a']);
    relay(first);
    assert.equal(lastKnownGood.get('sotw', cds), undefined, 'not before the ACK');
    recorder.request(request(cds, { nonce: 'n1', versionInfo: 'v1' }));
    assert.deepEqual(Buffer.concat(lastKnownGood.get('sotw', cds)!.response!), first);
    relay(sotwResponse('v2', 'n2', ['a', 'bad']));
    recorder.request(request(cds, { nonce: 'n2', versionInfo: 'v1', error: 'bad cluster' }));
    assert.equal(lastKnownGood.get('sotw', cds)?.version, 'v1');
    assert.equal(lastKnownGood.get('sotw', cds)?.ackedAt, 1_000);
  });

  it('SotW: a response larger than the budget is never kept, and the type is forgotten', () => {
    const { lastKnownGood, recorder, relay } = record('sotw', 64);
    relay(sotwResponse('v1', 'n1', ['a']));
    recorder.request(request(cds, { nonce: 'n1' }));
    assert.ok(lastKnownGood.get('sotw', cds));
    relay(sotwResponse('v2', 'n2', ['x'.repeat(100)]));
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
  });

  it('Delta: ACKed changes add up, removals apply, a NACKed change is dropped', () => {
    const { lastKnownGood, recorder, relay } = record('delta');
    recorder.request(request(eds, { names: ['a', 'b', 'c'] }));
    relay(deltaMessage(eds, 'v1', 'n1', ['a', 'b']));
    recorder.request(request(eds, { nonce: 'n1' }));
    relay(deltaMessage(eds, 'v2', 'n2', ['c'], ['a']));
    recorder.request(request(eds, { nonce: 'n2' }));
    relay(deltaMessage(eds, 'v3', 'n3', ['d'], ['b']));
    recorder.request(request(eds, { nonce: 'n3', error: 'no' }));
    assert.deepEqual(names(lastKnownGood, eds), ['b', 'c']);
    assert.equal(lastKnownGood.get('delta', eds)?.version, 'v2');
    assert.deepEqual(lastKnownGood.get('delta', eds)?.names, ['a', 'b', 'c']);
  });

  it('Delta: pushes that bring a name and take it back leave neither the name nor its resource kept; a wildcard type keeps its own (issue 44)', () => {
    const { lastKnownGood, recorder, relay } = record('delta');
    recorder.request(request(cds));
    relay(deltaMessage(cds, 'c1', 'c1', ['base']));
    recorder.request(request(cds, { nonce: 'c1' }));
    recorder.request(request(eds, { names: ['base'] }));
    relay(deltaMessage(eds, 'v0', 'n0', ['base']));
    recorder.request(request(eds, { nonce: 'n0' }));
    for (let push = 1; push <= 20; push++) {
      // Envoy subscribes to the new cluster's endpoints, holds them, then drops them with the cluster: the server sends no removal.
      recorder.request(request(eds, { names: [`se-${push}`] }));
      relay(deltaMessage(eds, `v${push}`, `n${push}`, [`se-${push}`]));
      recorder.request(request(eds, { nonce: `n${push}` }));
      recorder.request(request(eds, { unsubscribe: [`se-${push}`] }));
    }
    recorder.request(request(cds, { unsubscribe: ['base'] }));
    assert.deepEqual(lastKnownGood.get('delta', eds)?.names, ['base']);
    assert.deepEqual(names(lastKnownGood, eds), ['base']);
    assert.deepEqual(lastKnownGood.get('delta', cds)?.names, ['*'], 'still the (legacy) wildcard');
    assert.deepEqual(names(lastKnownGood, cds), ['base']);
  });

  it('Delta: a stream whose Envoy holds nothing starts the type afresh; one that holds resources builds on them', () => {
    const fresh = record('delta');
    fresh.lastKnownGood.applyDelta(
      eds,
      { version: 'old', resources: readDeltaChanges(deltaMessage(eds, 'old', 'x', ['stale'])).resources, removed: [], reset: true },
      0,
    );
    fresh.recorder.request(request(eds));
    fresh.relay(deltaMessage(eds, 'v1', 'n1', ['a']));
    fresh.recorder.request(request(eds, { nonce: 'n1' }));
    assert.deepEqual(names(fresh.lastKnownGood, eds), ['a']);
    const resumed = record('delta');
    resumed.lastKnownGood.applyDelta(
      eds,
      { version: 'old', resources: readDeltaChanges(deltaMessage(eds, 'old', 'x', ['kept'])).resources, removed: [], reset: true },
      0,
    );
    resumed.recorder.request(request(eds, { initialVersions: 1 }));
    resumed.relay(deltaMessage(eds, 'v1', 'n1', ['a']));
    resumed.recorder.request(request(eds, { nonce: 'n1' }));
    assert.deepEqual(names(resumed.lastKnownGood, eds), ['a', 'kept']);
  });
});

describe('LastKnownGoodAnswers: a stream served from the last-known-good config', () => {
  it('SotW: each type once, with a fresh nonce that wins over the kept one; ACK and NACK are told apart', () => {
    const lastKnownGood = new LastKnownGoodConfig();
    const response = sotwResponse('v1', 'server-nonce', ['a', 'b']);
    lastKnownGood.keepSotw(cds, 'v1', [response.subarray(0, 7), response.subarray(7)], 0);
    const answers = new LastKnownGoodAnswers('sotw', lastKnownGood, 'lkg-1');
    const sent = answers.answer(request(cds));
    assert.equal(sent.kind, 'send');
    const fields = readResponse((sent as { message: Buffer }).message, 'sotw');
    assert.deepEqual({ version: fields.version, nonce: fields.nonce, resources: fields.resources }, { version: 'v1', nonce: 'lkg-1-1', resources: 2 });
    assert.equal(answers.answer(request(cds, { nonce: 'lkg-1-1' })).kind, 'ack');
    assert.deepEqual(answers.answer(request(cds, { nonce: 'lkg-1-1', error: 'bad' })), { kind: 'nack', typeUrl: cds, version: 'v1', error: 'bad' });
    assert.equal(answers.answer(request(cds, { names: ['a'] })).kind, 'nothing');
    assert.equal(answers.answer(request(eds)).kind, 'missing');
  });

  it('Delta: the subscribed names only, later subscriptions as they come; a wildcard gets everything', () => {
    const lastKnownGood = new LastKnownGoodConfig();
    lastKnownGood.applyDelta(
      eds,
      { version: 'v1', resources: readDeltaChanges(deltaMessage(eds, 'v1', 'x', ['a', 'b', 'c'])).resources, removed: [], reset: true },
      0,
    );
    const answers = new LastKnownGoodAnswers('delta', lastKnownGood, 'lkg-2');
    const sentNames = (outcome: ReturnType<LastKnownGoodAnswers['answer']>) =>
      readDeltaChanges((outcome as { message: Buffer }).message).resources.map((entry) => entry.name);
    assert.deepEqual(sentNames(answers.answer(request(eds, { names: ['a'] }))), ['a']);
    assert.equal(answers.answer(request(eds, { nonce: 'lkg-2-1' })).kind, 'ack');
    assert.deepEqual(sentNames(answers.answer(request(eds, { names: ['c', 'zz'] }))), ['c']);
    assert.equal(answers.answer(request(eds, { names: ['zz'] })).kind, 'nothing');
    const wildcard = new LastKnownGoodAnswers('delta', lastKnownGood, 'lkg-3');
    assert.deepEqual(sentNames(wildcard.answer(request(eds))), ['a', 'b', 'c']);
  });

  it('Delta: a name unsubscribed and subscribed again is sent again; unsubscribing "*" ends the wildcard', () => {
    const lastKnownGood = new LastKnownGoodConfig();
    lastKnownGood.applyDelta(
      eds,
      { version: 'v1', resources: readDeltaChanges(deltaMessage(eds, 'v1', 'x', ['a', 'b'])).resources, removed: [], reset: true },
      0,
    );
    const answers = new LastKnownGoodAnswers('delta', lastKnownGood, 'lkg-4');
    const sentNames = (outcome: ReturnType<LastKnownGoodAnswers['answer']>) =>
      outcome.kind === 'send' ? readDeltaChanges(outcome.message).resources.map((entry) => entry.name) : outcome.kind;
    assert.deepEqual(sentNames(answers.answer(request(eds, { names: ['a'] }))), ['a']);
    assert.deepEqual(sentNames(answers.answer(request(eds, { unsubscribe: ['a'] }))), 'nothing');
    assert.deepEqual(sentNames(answers.answer(request(eds, { names: ['a'] }))), ['a']);
    const wildcard = new LastKnownGoodAnswers('delta', lastKnownGood, 'lkg-5');
    assert.deepEqual(sentNames(wildcard.answer(request(eds, { names: ['*'] }))), ['a', 'b']);
    wildcard.answer(request(eds, { unsubscribe: ['*', 'a', 'b'] }));
    assert.deepEqual(sentNames(wildcard.answer(request(eds, { names: ['b'] }))), ['b']);
  });

  it('covers(): something kept for every type Envoy asked for', () => {
    const lastKnownGood = new LastKnownGoodConfig();
    assert.equal(lastKnownGood.covers('sotw'), false);
    lastKnownGood.keepSotw(cds, 'v1', [sotwResponse('v1', 'n', [])], 0);
    assert.equal(lastKnownGood.covers('sotw'), true);
    lastKnownGood.subscribe('sotw', eds, ['a']);
    assert.equal(lastKnownGood.covers('sotw'), false);
  });

  it('covers(): one type kept of two asked is not enough for a new Envoy (a rotation would start it half configured)', () => {
    const lastKnownGood = new LastKnownGoodConfig();
    lastKnownGood.subscribe('sotw', cds, []);
    lastKnownGood.subscribe('sotw', eds, ['a']);
    lastKnownGood.keepSotw(cds, 'v1', [sotwResponse('v1', 'n', [])], 0);
    assert.equal(lastKnownGood.covers('sotw'), false, 'EDS asked and nothing kept for it');
    lastKnownGood.keepSotw(eds, 'v1', [sotwResponse('v1', 'n', ['a'])], 0);
    assert.equal(lastKnownGood.covers('sotw'), true);
  });
});

describe('LastKnownGoodRecorder: what it holds until Envoy answers', () => {
  it('SotW: a newer response replaces an older one still waiting; the older one\'s late ACK keeps nothing', () => {
    const { lastKnownGood, recorder, relay } = record('sotw');
    relay(sotwResponse('v1', 'n1', ['a']));
    const second = sotwResponse('v2', 'n2', ['a', 'b']);
    relay(second);
    assert.equal(recorder.pendingBytes, second.length);
    recorder.request(request(cds, { nonce: 'n1' }));
    assert.equal(lastKnownGood.get('sotw', cds), undefined);
    recorder.request(request(cds, { nonce: 'n2' }));
    assert.equal(lastKnownGood.get('sotw', cds)?.version, 'v2');
    assert.equal(recorder.pendingBytes, 0);
  });

  it('Delta: every unanswered response is held, up to the budget; past it the type is forgotten', () => {
    const { lastKnownGood, recorder, relay } = record('delta', 200);
    recorder.request(request(eds));
    relay(deltaMessage(eds, 'v1', 'n1', ['a']));
    recorder.request(request(eds, { nonce: 'n1' }));
    relay(deltaMessage(eds, 'v2', 'n2', ['b']));
    relay(deltaMessage(eds, 'v3', 'n3', ['c']));
    assert.ok(lastKnownGood.get('delta', eds));
    relay(deltaMessage(eds, 'v4', 'n4', ['d'.repeat(100)]));
    assert.equal(lastKnownGood.get('delta', eds), undefined, 'v2 dropped unanswered: the Delta state can no longer be rebuilt');
  });
});
