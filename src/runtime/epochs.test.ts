import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../metrics/index.ts';
import type { Proxy, ProxyExit, RunOptions } from '../agent/proxy.ts';
import { initialState, reduce } from '../agent/reconcile.ts';
import type { State } from '../agent/reconcile-types.ts';
import { FakeClock } from '../shared/clock.ts';
import { countAgentEvents, EpochTracker, registerAgentMetrics, registerStateGauges } from './epochs.ts';

/** A proxy whose epochs start with a pid and end when the test says. */
function manualProxy() {
  const ends = new Map<number, (exit: ProxyExit) => void>();
  const proxy: Proxy = {
    run: (epoch: number, _config: string, options: RunOptions) => {
      options.onStarted?.({ pid: 1000 + epoch });
      return new Promise((resolve) => ends.set(epoch, resolve));
    },
    drain: async () => true,
    activeConnections: async () => 7,
    cleanup: async () => undefined,
  };
  return { proxy, end: (epoch: number, exit: ProxyExit) => ends.get(epoch)!(exit) };
}

const policy = { initialDelayMs: 200, budget: 10, stableAfterMs: 60_000 };
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('EpochTracker', () => {
  it('records pid, start time and config of live epochs, and how they ended', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const registry = new Registry();
    let state: State = initialState(policy);
    const metrics = registerAgentMetrics(registry);
    registerStateGauges(registry, () => state);
    const tracker = new EpochTracker({ clock, metrics, keepExits: 1 });
    const { proxy, end } = manualProxy();
    const wrapped = tracker.wrap(proxy);
    let live = 0;
    const signal = new AbortController().signal;
    const first = wrapped.run(0, 'hash-a', { signal, onLive: () => live++ });
    [state] = reduce(state, { type: 'config-changed', config: 'hash-a' });
    [state] = reduce(state, { type: 'epoch-spawned', epoch: 0, pid: 1000 });
    assert.deepEqual(tracker.snapshot(state).live, [
      { epoch: 0, pid: 1000, startedAt: '2026-01-01T00:00:00.000Z', config: 'hash-a', live: false, aborting: false },
    ]);
    assert.deepEqual(tracker.snapshot(state).retry, { budget: 10, of: 10, scheduled: false }, "the retry budget's page");
    assert.equal(await wrapped.activeConnections(signal), 7, "the wrapped proxy answers with Envoy's count");

    clock.advance(5000);
    end(0, { kind: 'failed', detail: 'exit code 1' });
    await first;
    const second = wrapped.run(1, 'hash-a', { signal, onLive: () => live++ });
    end(1, { kind: 'aborted', detail: 'signal SIGTERM' });
    await second;
    const { recentExits } = tracker.snapshot(state);
    assert.deepEqual(
      recentExits,
      [
        {
          ...{ epoch: 1, startedAt: '2026-01-01T00:00:05.000Z', config: 'hash-a', live: false, pid: 1001 },
          ...{ exitedAt: '2026-01-01T00:00:05.000Z', kind: 'aborted', detail: 'signal SIGTERM' },
        },
      ],
      'keeps only the newest exits, never LIVE',
    );
    assert.deepEqual(
      tracker.snapshot(state).live,
      [{ epoch: 0, pid: 1000, startedAt: '', config: 'hash-a', live: false, aborting: false }],
      'an epoch the state still lists after its process ended has no start time left',
    );

    const text = await registry.metrics();
    assert.match(text, /^istio_agent_epochs_started_total 2$/m);
    assert.match(text, /^istio_agent_epoch_exits_total\{kind="failed"\} 1$/m);
    assert.match(text, /^istio_agent_retry_budget 10$/m);
    assert.equal(live, 0);
  });

  it('passes onLive through and marks the epoch live', async () => {
    const tracker = new EpochTracker({ clock: new FakeClock() });
    let onLive: (() => void) | undefined;
    const proxy: Proxy = {
      run: (_epoch, _config, options) => ((onLive = options.onLive), new Promise(() => undefined)),
      drain: async () => true,
      activeConnections: async () => undefined,
      cleanup: async () => undefined,
    };
    let called = 0;
    void tracker.wrap(proxy).run(0, 'c', { signal: new AbortController().signal, onLive: () => called++ });
    await tick();
    onLive!();
    const [started] = reduce(initialState(policy), { type: 'config-changed', config: 'c' });
    const [state] = reduce(started, { type: 'epoch-live', epoch: 0 });
    assert.equal(called, 1);
    assert.deepEqual(
      [tracker.snapshot(started).live[0]!.live, tracker.snapshot(state).live[0]!.live],
      [false, true],
      '/debug/epochs reads LIVE from the reconcile state',
    );
  });
});

describe('countAgentEvents', () => {
  it('counts retries and certificate changes after the first', async () => {
    const registry = new Registry();
    let state = initialState(policy);
    const metrics = registerAgentMetrics(registry);
    registerStateGauges(registry, () => state);
    const observe = countAgentEvents(metrics);
    for (const event of [
      { type: 'config-changed', config: 'a' },
      { type: 'config-changed', config: 'a' },
      { type: 'config-changed', config: 'b' },
      { type: 'retry-due' },
      { type: 'config-changed', config: 'c' },
    ] as const) {
      [state] = reduce(state, event);
      observe(event, state);
    }
    const text = await registry.metrics();
    assert.match(text, /^istio_agent_cert_reloads_total 2$/m);
    assert.match(text, /^istio_agent_retries_total 1$/m);
  });

  it('says why no epoch is LIVE: none running, one starting, and how the last one ended', async () => {
    const tracker = new EpochTracker({ clock: new FakeClock(0) });
    let state = initialState(policy);
    assert.deepEqual(tracker.whyNotLive(state), { reason: 'no Envoy epoch is LIVE (no Envoy running)', starting: false });
    const runs = new Map<number, { options: RunOptions; end: (exit: ProxyExit) => void }>();
    const proxy = tracker.wrap({
      run: (epoch, _config, options) => new Promise((resolve) => runs.set(epoch, { options, end: resolve })),
      drain: async () => true,
      activeConnections: async () => undefined,
      cleanup: async () => undefined,
    });
    const signal = new AbortController().signal;
    const first = proxy.run(0, 'hash-a', { signal, onLive: () => undefined });
    [state] = reduce(state, { type: 'config-changed', config: 'hash-a' });
    assert.deepEqual(tracker.whyNotLive(state), { reason: 'no Envoy epoch is LIVE (epoch 0 starting)', starting: true });
    runs.get(0)!.options.onLive();
    [state] = reduce(state, { type: 'epoch-live', epoch: 0 });
    assert.equal(tracker.whyNotLive(state), undefined);
    runs.get(0)!.end({ kind: 'failed', detail: 'killed by SIGKILL' });
    await first;
    [state] = reduce(state, { type: 'epoch-exited', epoch: 0, kind: 'failed', detail: 'killed by SIGKILL' });
    assert.deepEqual(tracker.whyNotLive(state), {
      reason: 'no Envoy epoch is LIVE (no Envoy running; epoch 0 ended failed: killed by SIGKILL)',
      starting: false,
    });
    assert.deepEqual(
      tracker.snapshot(state).recentExits.map(({ epoch, live }) => ({ epoch, live })),
      [{ epoch: 0, live: true }],
      'the exit says it had been LIVE',
    );
    const two = [0, 1].map((epoch) => ({ epoch, config: 'c', aborting: false, tookOver: false }));
    assert.equal(tracker.whyNotLive({ live: two })?.reason, 'no Envoy epoch is LIVE (epoch 0, 1 starting; epoch 0 ended failed: killed by SIGKILL)');
  });

  it('the epoch readiness counts for is the newest that took over, with its pid, else the newest starting one', () => {
    const tracker = new EpochTracker({ clock: new FakeClock(0) });
    const entry = (epoch: number, tookOver: boolean) => ({ epoch, config: 'c', aborting: false, tookOver, pid: 100 + epoch });
    assert.equal(tracker.serving({ live: [] }), undefined);
    assert.deepEqual(tracker.serving({ live: [entry(0, false)] }), { epoch: 0, pid: 100 }, 'while none took over: the one starting');
    assert.equal(tracker.serving({ live: [{ ...entry(0, false), aborting: true }] }), undefined);
    assert.deepEqual(tracker.serving({ live: [entry(0, true), entry(1, false)] }), { epoch: 0, pid: 100 });
    assert.deepEqual(tracker.serving({ live: [entry(0, true), entry(1, true)] }), { epoch: 1, pid: 101 });
  });
});
