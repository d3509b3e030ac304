import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeLastKnownGood, encodeLastKnownGood } from './codec.ts';
import { LastKnownGoodConfig } from './config.ts';
import { secretType } from '../../discovery/type-urls.ts';
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
    { name: 'older than the limit', input: text, now: expect.now + 24 * hour + 1, reason: /^written 1440 minutes ago, more than the 1440 allowed$/ },
    { name: 'two days old', input: text, now: expect.now + 48 * hour, reason: /^written 2880 minutes ago, more than the 1440 allowed$/ },
    { name: 'a malformed entry', input: text.replace('"mode":"sotw"', '"mode":"rest"'), reason: /malformed entry \(unknown stream kind\)/, secret: 'rest' },
    { name: 'JSON null', input: 'null', reason: /not a pilot-agent\/last-known-good\/v1 file/ },
    {
      name: 'types that are not a list',
      input: text.replace('"types":[', '"types":{"x":[').replace(/]}$/, ']}}'),
      reason: /not a pilot-agent\/last-known-good\/v1 file/,
    },
    {
      name: 'a writtenAt that is not a number',
      input: text.replace(`"writtenAt":${expect.now}`, `"writtenAt":"${expect.now}"`),
      reason: /not a pilot-agent\/last-known-good\/v1 file/,
    },
    {
      name: 'a type without typeUrl',
      input: text.replace(`"typeUrl":"${cds}"`, '"typeUrl":7'),
      reason: /malformed entry \(type without typeUrl, version or names\)/,
    },
    {
      name: 'a type without version',
      input: text.replace('"version":"v1"', '"version":null'),
      reason: /malformed entry \(type without typeUrl, version or names\)/,
    },
    {
      name: 'a type whose names are not a list',
      input: text.replace('"names":[]', '"names":"all"'),
      reason: /malformed entry \(type without typeUrl, version or names\)/,
    },
    {
      name: 'a SotW type without its response',
      input: text.replace('"response":', '"answer":'),
      reason: /malformed entry \(a state-of-the-world type has no response\)/,
    },
    { name: 'a Delta type without resources', input: text.replace('"resources":[', '"kept":['), reason: /malformed entry \(a delta type has no resources\)/ },
    { name: 'a type that is null', input: text.replace('"types":[', '"types":[null,'), reason: /malformed entry \(bad value\)/ },
  ];
  it('a file just at the age limit is still read; one written later than now is read too (clocks differ)', () => {
    assert.ok(decodeLastKnownGood(text, { ...expect, now: expect.now + 24 * hour }).ok);
    assert.ok(decodeLastKnownGood(text, { ...expect, now: expect.now - hour }).ok);
  });

  it('a Secret entry found in a file (from an older agent) is not restored', () => {
    const body = JSON.parse(text) as { types: unknown[] };
    body.types.push({ mode: 'sotw', typeUrl: secretType, version: 's', ackedAt: 1, names: [], response: Buffer.from('key').toString('base64') });
    const decoded = decodeLastKnownGood(JSON.stringify(body), expect);
    assert.ok(decoded.ok);
    assert.deepEqual(decoded.types.map(({ entry }) => entry.typeUrl).sort(), [eds, cds].sort());
  });

  it('reads names and resources as strings, the kept time as a number, whatever JSON types they came as', () => {
    const body = JSON.parse(text) as { types: { mode: string; names: unknown[]; ackedAt: unknown; resources?: { name: unknown; version: unknown }[] }[] };
    for (const type of body.types) {
      type.names = [1, 'b'];
      type.ackedAt = '7';
      if (type.resources) type.resources = type.resources.map((resource) => ({ ...resource, name: 5, version: 6 }));
    }
    const decoded = decodeLastKnownGood(JSON.stringify(body), expect);
    assert.ok(decoded.ok);
    const delta = decoded.types.find(({ mode }) => mode === 'delta')!.entry;
    assert.deepEqual(delta.names, ['1', 'b']);
    assert.equal(delta.ackedAt, 7);
    assert.deepEqual([...delta.resources!.entries()], [['5', { name: '5', version: '6', bytes: Buffer.from([1, 2, 3]) }]]);
    assert.equal(decoded.writtenAt, expect.now);
  });

  for (const row of rows) {
    it(`ignores ${row.name}`, () => {
      const decoded = decodeLastKnownGood(row.input, { ...expect, now: row.now ?? expect.now });
      assert.equal(decoded.ok, false);
      assert.match((decoded as { reason: string }).reason, row.reason);
      if (row.secret) assert.ok(!(decoded as { reason: string }).reason.includes(row.secret), 'no content of the file in the reason');
    });
  }
});
