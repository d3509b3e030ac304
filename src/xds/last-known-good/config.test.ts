import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LastKnownGoodConfig, type LastKnownGoodChange } from './config.ts';

const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const eds = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
const resource = (name: string, bytes: number) => ({ name, version: 'r', bytes: Buffer.alloc(bytes) });

describe('LastKnownGoodConfig', () => {
  it('summary: versions, ACK times, subscribed names, bytes and (Delta) resource counts per type', () => {
    const config = new LastKnownGoodConfig();
    config.subscribe('delta', eds, ['a', 'b', 'c']);
    config.keepSotw(cds, 'v1', [Buffer.alloc(3), Buffer.alloc(4)], 0);
    config.applyDelta(eds, { version: 'd1', resources: [resource('a', 5), resource('b', 6)], removed: [], reset: true }, 1_000);
    assert.deepEqual(config.summary(), {
      sotw: { [cds]: { version: 'v1', ackedAt: '1970-01-01T00:00:00.000Z', names: 0, bytes: 7 } },
      delta: { [eds]: { version: 'd1', ackedAt: '1970-01-01T00:00:01.000Z', names: 3, bytes: 11, resources: 2 } },
    });
  });

  it('subscriptions: SotW names and the Delta subscription replace the kept ones, and a kept type follows them', () => {
    const config = new LastKnownGoodConfig();
    config.subscribe('sotw', cds, ['a', 'b']);
    config.keepSotw(cds, 'v1', [], 0);
    assert.deepEqual(config.get('sotw', cds)!.names, ['a', 'b'], 'kept with the names asked before');
    config.subscribe('sotw', cds, ['c']);
    assert.deepEqual(config.get('sotw', cds)!.names, ['c']);
    config.subscribe('delta', eds, ['a', 'b']);
    config.subscribe('delta', eds, ['b', 'c']);
    config.applyDelta(eds, { version: 'd1', resources: [], removed: [], reset: true }, 0);
    assert.deepEqual(config.get('delta', eds)!.names, ['b', 'c']);
    config.subscribe('delta', eds, ['d']);
    assert.deepEqual(config.get('delta', eds)!.names, ['d']);
    assert.equal(config.get('sotw', eds), undefined, 'the kinds of stream are apart');
  });

  it('a Delta subscription without the wildcard takes along the kept resources it no longer names (a told change); with it, none', () => {
    const config = new LastKnownGoodConfig();
    const changes: LastKnownGoodChange[] = [];
    config.onChange((change) => void changes.push(change));
    config.applyDelta(eds, { version: 'd1', resources: [resource('a', 1), resource('b', 1)], removed: [], reset: true }, 0);
    config.applyDelta(cds, { version: 'd1', resources: [resource('x', 1), resource('y', 1)], removed: [], reset: true }, 0);
    changes.length = 0;
    config.subscribe('delta', eds, ['b', 'c']);
    config.subscribe('delta', cds, ['*', 'x']);
    assert.deepEqual([...config.get('delta', eds)!.resources!.keys()], ['b']);
    assert.deepEqual([...config.get('delta', cds)!.resources!.keys()], ['x', 'y']);
    assert.deepEqual(changes, [{ mode: 'delta', typeUrl: eds }]);
    config.subscribe('delta', eds, ['b']);
    assert.equal(changes.length, 1, 'nothing dropped, nothing to write');
  });

  it('Delta changes apply on what is kept; reset starts afresh; removals of unknown names are harmless', () => {
    const config = new LastKnownGoodConfig();
    config.applyDelta(eds, { version: 'd1', resources: [resource('a', 1), resource('b', 1)], removed: ['zzz'], reset: false }, 0);
    config.applyDelta(eds, { version: 'd2', resources: [resource('c', 1)], removed: ['a'], reset: false }, 0);
    assert.deepEqual([...config.get('delta', eds)!.resources!.keys()], ['b', 'c']);
    config.applyDelta(eds, { version: 'd3', resources: [resource('d', 1)], removed: [], reset: true }, 0);
    assert.deepEqual([...config.get('delta', eds)!.resources!.keys()], ['d']);
    assert.equal(config.get('delta', eds)!.version, 'd3');
  });

  it('changes are told to listeners until they unsubscribe; forgetting an unknown type is no change', () => {
    const config = new LastKnownGoodConfig();
    const changes: LastKnownGoodChange[] = [];
    const stop = config.onChange((change) => void changes.push(change));
    config.keepSotw(cds, 'v1', [], 0);
    config.subscribe('sotw', cds, ['a']);
    config.forget('delta', cds);
    config.forget('sotw', cds);
    assert.equal(config.has('sotw'), false);
    config.applyDelta(eds, { version: 'd1', resources: [], removed: [], reset: true }, 0);
    stop();
    config.keepSotw(cds, 'v2', [], 0);
    assert.deepEqual(changes, [{ mode: 'sotw', typeUrl: cds }, { mode: 'sotw', typeUrl: cds }, { mode: 'delta', typeUrl: eds }]);
  });

  it('restore puts back a type and its names without a change (nothing new to write)', () => {
    const config = new LastKnownGoodConfig();
    let changes = 0;
    config.onChange(() => void changes++);
    config.restore('sotw', { typeUrl: cds, version: 'v1', ackedAt: 0, response: [], names: ['x'] });
    assert.equal(changes, 0);
    assert.equal(config.covers('sotw'), true);
    assert.equal(config.covers('delta'), false);
    assert.deepEqual(config.types('sotw').map((entry) => entry.names), [['x']]);
    config.subscribe('sotw', eds, []);
    assert.equal(config.covers('sotw'), false, 'a restored type does not cover a type asked since');
  });

  it('a type kept before any subscription has no names; has() says whether anything is kept; a restored Delta subscription gives way to a live stream\'s (its first request states all of it)', () => {
    const config = new LastKnownGoodConfig();
    config.keepSotw(cds, 'v1', [], 0);
    config.applyDelta(eds, { version: 'd1', resources: [], removed: [], reset: true }, 0);
    assert.deepEqual(config.get('sotw', cds)!.names, []);
    assert.deepEqual(config.get('delta', eds)!.names, []);
    assert.equal(config.has('sotw'), true);
    assert.equal(config.has('delta'), true);
    const restored = new LastKnownGoodConfig();
    restored.restore('delta', { typeUrl: eds, version: 'd1', ackedAt: 0, resources: new Map(), names: ['a'] });
    restored.subscribe('delta', eds, ['b']);
    assert.deepEqual(restored.get('delta', eds)!.names, ['b']);
  });
});
