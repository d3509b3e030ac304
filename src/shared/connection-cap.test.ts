import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { ConnectionCap, shedLog } from './connection-cap.ts';

class FakeConnection extends EventEmitter {
  destroyed = false;
  readonly name: string;
  readonly loopback: boolean;
  constructor(name: string, loopback: boolean) {
    super();
    this.name = name;
    this.loopback = loopback;
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

function rig() {
  let now = 0;
  const shed: string[] = [];
  const cap = new ConnectionCap<FakeConnection>({
    max: 3,
    reservedForTrusted: 2,
    idleMs: 10_000,
    trusted: (c) => c.loopback,
    onShed: (what, trusted) => void shed.push(`${what}${trusted ? ' loopback' : ''}`),
    now: () => now,
  });
  const open = (name: string, loopback = false) => {
    const connection = new FakeConnection(name, loopback);
    cap.admit(connection);
    return connection;
  };
  return { cap, shed, open, tick: (ms: number) => void (now += ms) };
}

test('a full class makes room by closing its connection idle longest; a newcomer is refused only when all are busy', () => {
  const { cap, shed, open, tick } = rig();
  const [a, b, c] = ['a', 'b', 'c'].map((name) => (tick(1), open(name)));
  cap.busy(a!);
  const d = open('d');
  assert.deepEqual([a!.destroyed, b!.destroyed, c!.destroyed, d.destroyed], [false, true, false, false], 'b: the oldest idle (a is busy)');
  cap.busy(c!);
  cap.busy(d);
  const e = open('e');
  assert.ok(e.destroyed, 'every one busy: the newcomer is refused');
  assert.deepEqual(shed, ['evicted', 'refused']);
  assert.equal(cap.size, 3);
});

test('loopback peers have room the pod network cannot take, and a pod-network flood never closes a loopback connection', () => {
  const { cap, open } = rig();
  const flood = ['x', 'y', 'z'].map((name) => open(name));
  for (const connection of flood) cap.busy(connection);
  const probe = open('kubelet-on-loopback', true);
  const second = open('loopback-2', true);
  assert.ok(!probe.destroyed && !second.destroyed, 'reserved room');
  for (let i = 0; i < 10; i++) assert.ok(open(`more-${i}`).destroyed, 'the pod network stays at its cap');
  assert.ok(!probe.destroyed && !second.destroyed, 'loopback never evicted for the pod network');
  cap.busy(probe);
  cap.busy(second);
  const third = open('loopback-3', true);
  assert.ok(third.destroyed, 'the total is bounded too: all busy, the newcomer is refused');
  assert.equal(cap.size, 5);
});

test('a loopback newcomer at the total cap closes an idle pod-network connection first', () => {
  const { open } = rig();
  const outside = ['x', 'y', 'z'].map((name) => open(name));
  const inside = [open('l1', true), open('l2', true)];
  const late = open('l3', true);
  assert.ok(!late.destroyed);
  assert.equal(outside.filter((c) => c.destroyed).length, 1);
  assert.ok(inside.every((c) => !c.destroyed));
});

test('connections idle past idleMs are closed by the sweep; busy ones stay however long', () => {
  const { cap, shed, open, tick } = rig();
  const [idle, working] = [open('idle'), open('working')];
  cap.busy(working);
  tick(9_999);
  cap.sweep();
  assert.ok(!idle.destroyed);
  tick(1);
  cap.sweep();
  assert.ok(idle.destroyed && !working.destroyed);
  cap.idle(working);
  tick(10_000);
  cap.sweep();
  assert.ok(working.destroyed, 'idle again since its request ended');
  assert.deepEqual(shed, ['idle', 'idle']);
});

test('shed lines: at most one a minute, with the counts since the last', () => {
  let now = 0;
  const lines: Record<string, unknown>[] = [];
  const onShed = shedLog((fields) => void lines.push(fields), 'status', () => now);
  for (let i = 0; i < 1000; i++) onShed('refused', false);
  now = 60_000;
  onShed('evicted', true);
  assert.deepEqual(lines, [{ listener: 'status', refused: 1 }, { listener: 'status', refused: 999, evictedLoopback: 1 }]);
});

/** Timers the test fires by hand: `armed` is how many wait now. */
function fakeTimers() {
  let now = 0;
  const pending = new Map<number, { at: number; callback: () => void }>();
  let next = 0;
  const host = {
    setTimeout: (callback: () => void, ms: number) => (pending.set(++next, { at: now + ms, callback }), next),
    clearTimeout: (handle: unknown) => void pending.delete(handle as number),
    monotonicNow: () => now,
  };
  /** Moves time on by `ms`, firing what falls due (bounded: a sweeper that re-arms forever fails by name). */
  const advance = (ms: number) => {
    const until = now + ms;
    for (let steps = 0; ; steps++) {
      assert.ok(steps < 1000, 'timers kept firing: the sweeper never settles');
      const due = [...pending].filter(([, timer]) => timer.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      pending.delete(due[0]);
      now = due[1].at;
      due[1].callback();
    }
    now = until;
  };
  return { host, advance, armed: () => pending.size, now: () => now };
}

test('the idle sweeper runs only while a connection is idle: no connection, or only busy ones, arm no timer', () => {
  const timers = fakeTimers();
  const cap = new ConnectionCap<FakeConnection>({ max: 3, reservedForTrusted: 0, idleMs: 4000, trusted: () => false, now: timers.now, timers: timers.host });
  const server = new EventEmitter();
  cap.attach(server as never, false);
  assert.equal(timers.armed(), 0, 'attached with no connection: nothing to sweep, no timer');
  const stream = new FakeConnection('envoy', false);
  cap.admit(stream);
  assert.equal(timers.armed(), 1, 'an idle connection arms the sweeper');
  cap.busy(stream);
  timers.advance(1000);
  assert.equal(timers.armed(), 0, 'only a busy connection: the sweeper stops at its next tick');
  cap.idle(stream);
  assert.equal(timers.armed(), 1, 'idle again: the sweeper is back');
  timers.advance(5000);
  assert.ok(stream.destroyed, 'idle past idleMs: closed by the sweep');
  assert.equal(timers.armed(), 0, 'nothing left open: the sweeper stops');
  cap.admit(new FakeConnection('late', false));
  server.emit('close');
  assert.equal(timers.armed(), 0, 'the server closed: the sweeper stops for good');
});
