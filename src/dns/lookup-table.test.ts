import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LookupTable } from './lookup-table.ts';
import { encodeNameTable, nameTableEntriesAt, readNameEntry } from './name-table-wire.ts';

const pod = { namespace: 'default', domain: 'default.svc.cluster.local', search: [] };
const info = (ips: string[], extra: Partial<{ registry: string; shortname: string; namespace: string }> = {}) => ({
  ips,
  registry: '',
  shortname: '',
  namespace: '',
  altHosts: [],
  ...extra,
});

describe('LookupTable', () => {
  it('counts a name once however many entries give it, and finds every name it holds (split over many maps)', () => {
    const table = new LookupTable(pod);
    table.add('a.default.svc.cluster.local', info(['10.0.0.1'], { registry: 'Kubernetes', shortname: 'a', namespace: 'default' }));
    assert.equal(table.size, 4, 'the host, a.default, a.default.svc and a');
    // An External host that is one of those short forms already: replaced, not counted again.
    table.add('a.default', info(['10.0.0.2']));
    assert.equal(table.size, 4);
    assert.deepEqual(table.get('a.default.')?.v4, ['10.0.0.2']);
    for (let at = 0; at < 5000; at++) table.add(`svc-${at}.mesh.internal`, info([`10.1.${at >> 8}.${at & 255}`]));
    assert.equal(table.size, 5004);
    for (let at = 0; at < 5000; at++) assert.deepEqual(table.get(`svc-${at}.mesh.internal.`)?.v4, [`10.1.${at >> 8}.${at & 255}`]);
    assert.equal(table.has('svc-5000.mesh.internal.'), false);
  });

  it('tells apart names whose hashes are the same, built from bytes or not', () => {
    // Each pair shares its low 30 bits of unseeded FNV-1a (an older cut); the hash here is one for all anyway.
    const pairs = [['1wnmcc2.mesh', '1kprzgl.mesh'], ['xjr4lt.mesh', 'b86hzb.mesh']];
    const hosts: [string, { ips: string[] }][] = pairs.flat().map((host, at) => [host, { ips: [`10.2.0.${at + 1}`] }]);
    const bytes = encodeNameTable([...hosts, ['xjr4lt.mesh', { ips: ['10.2.0.9'] }]]);
    const fromBytes = new LookupTable(pod, bytes, { hash: () => 1 });
    for (const [at, entry] of nameTableEntriesAt(bytes)) fromBytes.add(...readNameEntry(entry), at);
    const fromEntries = new LookupTable(pod, undefined, { hash: () => 1 });
    for (const [host, { ips }] of hosts) fromEntries.add(host, info(ips));
    fromEntries.add('xjr4lt.mesh', info(['10.2.0.9']));
    for (const table of [fromBytes, fromEntries]) {
      assert.equal(table.size, 4);
      assert.deepEqual(
        pairs.flat().map((host) => table.get(`${host}.`)?.v4),
        [['10.2.0.1'], ['10.2.0.2'], ['10.2.0.9'], ['10.2.0.4']],
        'each its own, the later entry for a name given twice',
      );
      assert.equal(table.has('1wnmcc3.mesh.'), false);
    }
  });

  it('builds 8,192 names that all share one hash in linear steps, each still found (a quadratic chain was 28.8 s of CPU)', () => {
    const count = 8_192;
    const bytes = encodeNameTable(Array.from({ length: count }, (_, at) => [`flood-${at}.mesh.internal`, { ips: [`198.18.${at >> 8}.${at & 255}`] }]));
    const table = new LookupTable(pod, bytes, { hash: () => 7 });
    for (const [at, entry] of nameTableEntriesAt(bytes)) table.add(...readNameEntry(entry), at);
    assert.equal(table.size, count);
    assert.ok(table.probes <= 16 * count, `${table.probes} probes for ${count} names`);
    for (const at of [0, 9, 4095, count - 1]) assert.deepEqual(table.get(`flood-${at}.mesh.internal.`)?.v4, [`198.18.${at >> 8}.${at & 255}`]);
    assert.equal(table.has('flood-x.mesh.internal.'), false);
    table.add('flood-9.mesh.internal', info(['198.19.0.1']));
    assert.equal(table.size, count, 'a name given again is replaced in the map, not counted');
    assert.deepEqual(table.get('flood-9.mesh.internal.')?.v4, ['198.19.0.1']);
  });

  it('seeds its hash per table: 64 names that all share one FNV-1a hash from seed 0 walk no chain', () => {
    const names = collidingUnderSeedZero();
    assert.equal(new Set(names.map((name) => fnv1a(name, 0))).size, 1, 'the premise: one seed-0 hash for all 64');
    const build = (table: LookupTable) => {
      names.forEach((name, at) => table.add(name, info([`198.18.1.${at}`])));
      assert.equal(table.size, names.length);
      assert.deepEqual(table.get(names[63]!)?.v4, ['198.18.1.63']);
      return table.probes;
    };
    assert.ok(build(new LookupTable(pod, undefined, { hash: (name) => fnv1a(name, 0) })) >= 36, 'seed 0: a chain of 8 walked, then a map');
    const probes = build(new LookupTable(pod));
    assert.ok(probes <= 2, `${probes} probes: the table's own seed let names built offline collide`);
  });

  it('answers a known name under the first search domain, however that domain is written, with a CNAME to it', () => {
    for (const search of ['Default.Svc.Cluster.Local.', 'default.svc.cluster.local']) {
      const table = new LookupTable({ ...pod, search: [search] });
      table.add('db.mesh', info(['10.3.0.1']));
      table.add('api.default.svc.cluster.local', info(['10.3.0.2'], { registry: 'Kubernetes', shortname: 'api', namespace: 'default' }));
      assert.deepEqual(table.get('db.mesh.default.svc.cluster.local.'), { cname: 'db.mesh.' }, search);
      assert.deepEqual(table.get('api.default.svc.cluster.local.'), { v4: ['10.3.0.2'] }, 'a real name ending in the domain is no twin');
      assert.equal(table.has('api.default.svc.cluster.local.default.svc.cluster.local.'), false, "no twin of a name in the search domain");
      assert.equal(table.has('unknown.mesh.default.svc.cluster.local.'), false, 'no twin of an unknown name');
      assert.equal(table.has('default.svc.cluster.local.'), false);
    }
  });

  it('gives a Kubernetes host short names only in the pod cluster domain, its alt hosts always, and a dotted one none', () => {
    const kubernetes = (namespace: string, altHosts: string[] = []) => ({
      ...info(['10.4.0.1'], { registry: 'Kubernetes', shortname: 'a', namespace }),
      altHosts,
    });
    const names = (table: LookupTable) => ['a.', 'a.other.', 'a.other.svc.', 'a.default.', 'alias.mesh.'].filter((name) => table.has(name));
    const local = new LookupTable(pod);
    local.add('a.other.svc.cluster.local', kubernetes('other', ['Alias.Mesh']));
    assert.deepEqual(names(local), ['a.other.', 'a.other.svc.', 'alias.mesh.'], 'no bare name outside the pod namespace');
    const elsewhere = new LookupTable(pod);
    elsewhere.add('a.other.svc.remote.local', kubernetes('other', ['alias.mesh']));
    assert.deepEqual([elsewhere.size, names(elsewhere)], [1, []]);
    const noDomain = new LookupTable({ ...pod, domain: '' });
    noDomain.add('a.default.svc.cluster.local', kubernetes('default'));
    assert.deepEqual([noDomain.size, names(noDomain)], [1, []]);
    const dotted = new LookupTable(pod);
    assert.equal(dotted.add('a.default.svc.cluster.local.', kubernetes('default')), true);
    assert.deepEqual([dotted.size, names(dotted), dotted.has('a.default.svc.cluster.local.')], [0, [], false]);
  });

  it('walks a chain of at most 8 names that share a hash, and files a ninth by name (no walk)', () => {
    const table = new LookupTable(pod, undefined, { hash: () => 3 });
    const cost = (name: string) => {
      const before = table.probes;
      assert.deepEqual(table.get(name)?.v4?.length, 1, name);
      return table.probes - before;
    };
    for (let at = 0; at < 8; at++) table.add(`c${at}.mesh`, info([`10.5.0.${at}`]));
    assert.deepEqual([cost('c0.mesh.'), cost('c3.mesh.'), cost('c7.mesh.')], [1, 4, 8]);
    table.add('c3.mesh', info(['10.5.1.3']));
    assert.deepEqual([table.size, table.get('c3.mesh.')?.v4], [8, ['10.5.1.3']]);
    table.add('c8.mesh', info(['10.5.0.8']));
    assert.deepEqual([cost('c0.mesh.'), cost('c7.mesh.'), cost('c8.mesh.'), table.size], [0, 0, 0, 9]);
  });
});

/** FNV-1a from a seeded start, the top 30 bits: what the table files names by, redone here so the premise can be checked. */
function fnv1a(name: string, seed: number): number {
  let hash = 0x811c9dc5 ^ seed;
  for (let at = 0; at < name.length; at++) hash = Math.imul(hash ^ name.charCodeAt(at), 0x01000193);
  return hash >>> 2;
}

/**
 * 2^6 names with one whole 32-bit FNV-1a state from seed 0 (so a shared
 * suffix keeps them together): each block pair below leaves the same state
 * (found by a birthday search, the way an attacker would offline), and any
 * pick of one block per pair collides.
 */
function collidingUnderSeedZero(): string[] {
  const pairs = [['003pwu', '00a5fa'], ['004uzx', '00f2ad'], ['0035zx', '00apcd'], ['0053zx', '00cpad'], ['0035zx', '00apcd'], ['0053zx', '00cpad']];
  return Array.from({ length: 64 }, (_, at) => `${pairs.map((pair, bit) => pair[(at >> bit) & 1]).join('')}.mesh.internal.`);
}
