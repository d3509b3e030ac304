import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeNameTable } from './name-table-wire.ts';
import { TableStore } from './table-store.ts';

const pod = { namespace: 'default', domain: 'default.svc.cluster.local', search: [] };
const table = (count: number, prefix = 'svc') =>
  encodeNameTable(
    Array.from(
      { length: count },
      (_, at) => [`${prefix}-${at}.mesh.internal`, { ips: [`10.${at >> 16}.${(at >> 8) & 255}.${at & 255}`] }] as [string, { ips: string[] }],
    ),
  );

describe('TableStore', () => {
  it('builds a large table in batches, letting the event loop turn between them, and swaps it in whole', async () => {
    const store = new TableStore({ pod, now: () => 0 });
    let turns = 0;
    let sawHalf = false;
    const tick = () => {
      turns++;
      if (store.table && store.table.size < 10_000) sawHalf = true;
      if (!done) setImmediate(tick);
    };
    let done = false;
    setImmediate(tick);
    await store.load(table(10_000), 'v1', 'nds');
    done = true;
    assert.ok(turns >= 4, `the loop turned ${turns} times while 10,000 names were built`);
    assert.equal(sawHalf, false, 'queries never see half a table');
    assert.equal(store.table?.size, 10_000);
    assert.deepEqual(store.table?.get('svc-1.mesh.internal.default.svc.cluster.local.'), undefined, 'no search list here: no twins');
    assert.deepEqual(store.table?.get('svc-9999.mesh.internal.')?.v4, ['10.0.39.15']);
  });

  it('refuses a table that does not parse and keeps the last one', async () => {
    const store = new TableStore({ pod, now: () => 0 });
    await store.load(table(3), 'v1', 'nds');
    await assert.rejects(store.load(Buffer.from([0x0a, 0xff, 0xff, 0x01]), 'v2', 'nds'));
    assert.equal(store.debug(false).version, 'v1');
    assert.equal(store.table?.size, 3);
    await store.load(table(2, 'other'), 'v3', 'nds');
    assert.equal(store.debug(false).version, 'v3', 'a later good table still loads');
  });

  it('shows version, source, age and size, with the hosts unless asked for a summary', async () => {
    let now = 1_000_000;
    const store = new TableStore({ pod, now: () => now });
    assert.deepEqual(store.debug(true), { loaded: false });
    await store.load(encodeNameTable([['db.legacy.internal', { ips: ['240.240.0.1'] }], ['broken.internal', { ips: ['nope'] }]]), 'v7', 'kept');
    now += 42_000;
    const { buildMs, longestStepMs, slices, ...shown } = store.debug(true);
    assert.ok(buildMs! >= longestStepMs! && longestStepMs! >= 0 && slices! >= 1);
    assert.deepEqual(shown, {
      loaded: true,
      version: 'v7',
      source: 'kept',
      receivedAt: new Date(1_000_000).toISOString(),
      ageSeconds: 42,
      entries: 2,
      names: 1,
      bytes: store.debug(false).bytes,
      skipped: 1,
      table: { 'db.legacy.internal': ['240.240.0.1'], 'broken.internal': ['nope'] },
    });
  });
});

describe('TableStore, the same table again', () => {
  it('is not rebuilt: the lookup table stays the same object, version and time move on', async () => {
    let now = 0;
    const store = new TableStore({ pod, now: () => now });
    await store.load(table(5), 'v1', 'nds');
    const first = store.table;
    now = 5_000;
    await store.load(table(5), 'v2', 'nds');
    assert.equal(store.table, first);
    assert.equal(store.debug(false).version, 'v2');
    assert.equal(store.debug(false).receivedAt, new Date(5_000).toISOString());
  });
});

/** A monotonic clock that moves `stepMs` each time it is read (once a name, about), and turns of the loop that call `atTurn` instead. */
function fakeLoop(stepMs: number, atTurn: () => void = () => {}) {
  let now = 0;
  return { monotonic: () => (now += stepMs), yieldToLoop: async () => atTurn() };
}

describe('TableStore, slices and the swap (fake clock and loop)', () => {
  it('answers from the old table at every turn of a build, and swaps the new one in whole, once', async () => {
    const turns: { version?: string; oldAnswer?: string[]; newKnown?: boolean; size?: number }[] = [];
    let store: TableStore | undefined;
    const atTurn = () =>
      turns.push({
        version: store!.debug(false).version,
        oldAnswer: store!.table?.get('old-7.mesh.internal.')?.v4,
        newKnown: store!.table?.has('new-1.mesh.internal.'),
        size: store!.table?.size,
      });
    store = new TableStore({ pod, now: () => 0, sliceMs: 2, ...fakeLoop(0.25, atTurn) });
    await store.load(table(50, 'old'), 'v1', 'nds');
    const old = store.table;
    turns.length = 0;
    const swaps: (number | undefined)[] = [];
    store.onLoad(() => swaps.push(store.table?.size));
    await store.load(table(1000, 'new'), 'v2', 'nds');
    assert.ok(turns.length >= 100, `the build let the loop turn ${turns.length} times`);
    assert.deepEqual(
      new Set(turns.map((turn) => JSON.stringify(turn))),
      new Set([JSON.stringify({ version: 'v1', oldAnswer: ['10.0.0.7'], newKnown: false, size: 50 })]),
      'every turn saw the old table, whole and answering',
    );
    assert.deepEqual(swaps, [1000], 'one swap, to the whole new table');
    assert.notEqual(store.table, old);
    assert.deepEqual(store.table?.get('new-999.mesh.internal.')?.v4, ['10.0.3.231']);
    assert.equal(store.table?.has('old-7.mesh.internal.'), false);
    assert.equal(store.debug(false).version, 'v2');
  });

  it('keeps each slice within sliceMs (plus the name that crossed it); Infinity builds in one go', async () => {
    const sliced = new TableStore({ pod, now: () => 0, sliceMs: 2, ...fakeLoop(0.25) });
    await sliced.load(table(1000), 'v1', 'nds');
    const { longestStepMs, slices } = sliced.debug(false);
    assert.ok(longestStepMs! <= 2.5, `longest step ${longestStepMs} ms`);
    assert.ok(slices! >= 100, `${slices} slices`);
    let turns = 0;
    const whole = new TableStore({ pod, now: () => 0, sliceMs: Infinity, ...fakeLoop(0.25, () => turns++) });
    await whole.load(table(1000), 'v1', 'nds');
    assert.deepEqual([whole.debug(false).slices, turns, whole.table?.size], [1, 0, 1000]);
  });

  it('a table that breaks part-way, after turns, leaves the old one in place', async () => {
    let turns = 0;
    const store = new TableStore({ pod, now: () => 0, sliceMs: 2, ...fakeLoop(0.25, () => turns++) });
    await store.load(table(5, 'old'), 'v1', 'nds');
    const old = store.table;
    await assert.rejects(store.load(Buffer.concat([table(500, 'new'), Buffer.from([0x0a, 0xff, 0xff, 0x01])]), 'v2', 'nds'));
    assert.ok(turns > 10, `${turns} turns before it broke`);
    assert.equal(store.table, old);
    assert.deepEqual(store.table?.get('old-3.mesh.internal.')?.v4, ['10.0.0.3']);
    assert.equal(store.debug(false).version, 'v1');
  });

  it('gives up a build that takes longer than maxBuildMs in all, keeping the old table', async () => {
    const store = new TableStore({ pod, now: () => 0, sliceMs: 2, maxBuildMs: 100, ...fakeLoop(0.25) });
    await store.load(table(5, 'old'), 'v1', 'nds');
    const old = store.table;
    // 1,000 names at 0.25 ms a read of the clock: past 100 ms well before the end.
    await assert.rejects(store.load(table(1000, 'new'), 'v2', 'nds'), /took more than 100 ms/);
    assert.equal(store.table, old);
    assert.equal(store.debug(false).version, 'v1');
  });
  it('reports what the build cost on its clock: total, longest step, slices, and entries skipped', async () => {
    // Every read of the clock moves it 1 ms: 5 names with sliceMs 2 take 3 slices, the clock read 14 times (13 ms after the first).
    const store = new TableStore({ pod, now: () => 0, sliceMs: 2, maxBuildMs: 9, ...fakeLoop(1) });
    const entries: [string, { ips: string[] }][] = ['a', 'b', 'c', 'd', 'e'].map((name, at) => [`${name}.mesh`, { ips: [at === 2 ? 'nope' : `10.6.0.${at}`] }]);
    await store.load(encodeNameTable(entries), 'v1', 'nds');
    const { entries: count, skipped, buildMs, longestStepMs, slices, names } = store.debug(false);
    assert.deepEqual({ count, skipped, buildMs, longestStepMs, slices, names }, { count: 5, skipped: 1, buildMs: 13, longestStepMs: 3, slices: 3, names: 4 });
    const third = new TableStore({ pod, now: () => 0, sliceMs: Infinity, ...fakeLoop(1 / 3) });
    await third.load(encodeNameTable(entries), 'v1', 'nds');
    assert.equal(third.debug(false).buildMs, 2.33, 'rounded to hundredths: 7 thirds of a ms');
  });
});
