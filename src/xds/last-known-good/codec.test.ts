import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeLastKnownGood, encodeLastKnownGood } from './codec.ts';
import { LastKnownGoodConfig } from './config.ts';
import { secretType } from '../type-urls.ts';
import { lenField } from '../../grpc/proto-wire.ts';

const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const eds = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
const hour = 3_600_000;
const expect = { node: 'sidecar~1~a~b', now: 10 * hour, maxAgeMs: 24 * hour };

function sample(): LastKnownGoodConfig {
  const lastKnownGood = new LastKnownGoodConfig();
  lastKnownGood.subscribe('sotw', cds, []);
  lastKnownGood.keepSotw(cds, 'v1', [lenField(1, 'v1'), lenField(4, cds)], 5);
  lastKnownGood.keepSotw(secretType, 'v1', [Buffer.from('-----BEGIN PRIVATE KEY-----')], 5);
  lastKnownGood.applyDelta(eds, { version: 'd1', resources: [{ name: 'a', version: 'd1', bytes: Buffer.from([1, 2, 3]) }], removed: [], reset: true }, 6);
  return lastKnownGood;
}

describe('last-known-good file codec', () => {
  it('round-trips SotW responses and Delta resources, without Secrets', () => {
    const text = encodeLastKnownGood(sample(), expect.node, expect.now);
    assert.doesNotMatch(text, /Secret|PRIVATE/);
    const decoded = decodeLastKnownGood(text, expect);
    assert.ok(decoded.ok);
    const byType = new Map(decoded.types.map(({ mode, entry }) => [`${mode} ${entry.typeUrl}`, entry]));
    assert.deepEqual([...byType.keys()].sort(), [`delta ${eds}`, `sotw ${cds}`]);
    assert.deepEqual(byType.get(`sotw ${cds}`)!.response, [Buffer.concat(sample().get('sotw', cds)!.response!)]);
    assert.deepEqual([...byType.get(`delta ${eds}`)!.resources!.values()][0], { name: 'a', version: 'd1', bytes: Buffer.from([1, 2, 3]) });
  });

  const text = encodeLastKnownGood(sample(), expect.node, expect.now);
  const rows: { name: string; input: string; now?: number; reason: RegExp; secret?: string }[] = [
    { name: 'garbage', input: 'not json', reason: /not a kept-config file/ },
    { name: 'another file (its first bytes never in the reason)', input: 'root:x:0:0:SECRET-LINE', reason: /not a kept-config file/, secret: 'SECRET' },
    { name: 'truncated', input: text.slice(0, 40), reason: /not a kept-config file/ },
    { name: 'another format', input: JSON.stringify({ format: 'x', types: [], writtenAt: 0 }), reason: /not a pilot-agent\/last-known-good\/v1 file/ },
    { name: 'another node id', input: text.replace(expect.node, 'router~2~c~d'), reason: /another node$/, secret: 'router~2~c~d' },
    { name: 'older than the limit', input: text, now: expect.now + 24 * hour + 1, reason: /more than the 1440 allowed/ },
    { name: 'a malformed entry', input: text.replace('"mode":"sotw"', '"mode":"rest"'), reason: /malformed entry \(unknown stream kind\)/, secret: 'rest' },
  ];
  for (const row of rows) {
    it(`ignores ${row.name}`, () => {
      const decoded = decodeLastKnownGood(row.input, { ...expect, now: row.now ?? expect.now });
      assert.equal(decoded.ok, false);
      assert.match((decoded as { reason: string }).reason, row.reason);
      if (row.secret) assert.ok(!(decoded as { reason: string }).reason.includes(row.secret), 'no content of the file in the reason');
    });
  }
});
