import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import { Agent } from './agent.ts';
import { FakeProxy } from './fake-proxy.ts';
import { within } from '../../test/support/within.ts';

const policy = { initialDelayMs: 200, budget: 2, stableAfterMs: 60_000, parentInitializingDelayMs: 1000 };

/** The agent's exit, bounded: a bug that keeps it running fails here, not at the runner's timeout. */
const exitOf = (agent: Agent) => within(agent.exited, 5000, 'the agent to resolve its exit');

/** Lets promise callbacks (epoch exits) run; no time passes. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

const drainMs = 5000;

function setup() {
  const clock = new FakeClock();
  const proxy = new FakeProxy();
  const agent = new Agent({ proxy, clock, logger: silentLogger, policy, drain: { durationMs: drainMs } });
  return { clock, proxy, agent };
}

describe('Agent (interpreter) with a FakeProxy and a FakeClock', () => {
  it('hot-restarts on a new config and cleans up the parent when it exits', async () => {
    const { proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    agent.dispatch({ type: 'config-changed', config: 'B' });
    assert.deepEqual(proxy.starts, [{ epoch: 0, config: 'A' }, { epoch: 1, config: 'B' }]);
    proxy.exit(0, 'normal');
    await flush();
    assert.deepEqual(proxy.cleaned, [0]);
    assert.deepEqual(proxy.running, [1]);
    assert.equal(agent.state.current, 'B');
  });

  it('retries after the backoff on the injected clock, from epoch 0', async () => {
    const { clock, proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.exit(0, 'failed', 'exit code 1');
    await flush();
    clock.advance(199);
    assert.equal(proxy.starts.length, 1, 'no retry before 200 ms');
    clock.advance(1);
    assert.deepEqual(proxy.starts.at(-1), { epoch: 0, config: 'A' });
  });

  it('resolves RETRY_BUDGET_SPENT (exit 1) once the budget is spent', async () => {
    const { clock, proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    for (const delay of [200, 400]) {
      proxy.exit(0, 'failed');
      await flush();
      clock.advance(delay);
    }
    proxy.exit(0, 'failed', 'exit code 1: boom');
    assert.deepEqual(await exitOf(agent), { error: 'RETRY_BUDGET_SPENT', reason: 'retry budget spent trying to start Envoy with config A: exit code 1: boom' });
    assert.equal(proxy.starts.length, 3);
    assert.equal(clock.pending, 0, 'no timer left behind');
  });

  it('refills the budget after an epoch stayed LIVE for the stable period', async () => {
    const { clock, proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.exit(0, 'failed');
    await flush();
    clock.advance(200);
    proxy.live(0);
    assert.equal(agent.state.budget, 1);
    clock.advance(60_000);
    assert.equal(agent.state.budget, 2);
  });

  it('shuts down: drains, aborts every epoch, resolves 0 once all have exited', async () => {
    const { clock, proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    agent.dispatch({ type: 'config-changed', config: 'B' });
    agent.dispatch({ type: 'shutdown' });
    assert.deepEqual(proxy.drains, [false], 'Envoy told to drain, and to exit after');
    await flush();
    clock.advance(drainMs - 1);
    await flush();
    assert.deepEqual(proxy.running, [0, 1], 'nothing stops before the drain duration is over');
    clock.advance(1);
    assert.equal((await exitOf(agent)).error, undefined);
    assert.deepEqual(proxy.running, []);
    assert.deepEqual(proxy.cleaned.sort(), [0, 1]);
  });

  it('says "draining listeners" with the duration once Envoy took the drain, and nothing of it when Envoy refused', async () => {
    for (const drainTaken of [true, false]) {
      const lines: Record<string, unknown>[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const clock = new FakeClock();
      const proxy = new FakeProxy();
      proxy.drainTaken = drainTaken;
      const drain = { durationMs: drainMs, exitOnZeroActiveConnections: true, minDurationMs: 1000 };
      const agent = new Agent({ proxy, clock, logger, policy, drain });
      agent.dispatch({ type: 'config-changed', config: 'A' });
      proxy.live(0);
      proxy.connections.push(0);
      agent.dispatch({ type: 'shutdown' });
      await flush();
      clock.advance(1000);
      assert.equal((await exitOf(agent)).error, undefined);
      const draining = lines.filter((line) => line.msg === 'draining listeners');
      const want = drainTaken ? [{ durationMs: drainMs, exitOnZeroActiveConnections: true }] : [];
      assert.deepEqual(draining.map(({ durationMs, exitOnZeroActiveConnections }) => ({ durationMs, exitOnZeroActiveConnections })), want);
      assert.equal(lines.filter((line) => line.msg === 'no active downstream connections; stopping').length, 1, 'the wait still ran');
    }
  });

  it('stopNow before any drain: Envoy is not told to drain, and the stop does not wait', async () => {
    const { proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    agent.stopNow();
    assert.equal((await exitOf(agent)).error, undefined);
    assert.deepEqual(proxy.drains, []);
  });

  it('a second signal (hurry) cuts the drain short', async () => {
    const { proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    agent.dispatch({ type: 'shutdown' });
    agent.dispatch({ type: 'hurry' });
    assert.equal((await exitOf(agent)).error, undefined);
    assert.deepEqual(proxy.running, []);
  });

  it('after an early drain (POST /drain) the shutdown stops every epoch without draining again', async () => {
    const { proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    assert.equal(await agent.requestDrain(), true);
    assert.deepEqual(proxy.drains, [true], 'drained for good: Envoy stays up');
    assert.equal(agent.state.drainedEarly, true);
    agent.dispatch({ type: 'shutdown' });
    assert.deepEqual(proxy.drains, [true], 'no second drain');
    assert.equal((await agent.exited).error, undefined);
    assert.deepEqual(proxy.running, []);
  });

  it('an epoch that takes over during the drain is told to drain its listeners', async () => {
    const { clock, proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    agent.dispatch({ type: 'config-changed', config: 'B' });
    agent.dispatch({ type: 'shutdown' });
    proxy.live(1);
    assert.deepEqual(proxy.drains, [false, false], 'the shutdown drain, then the new epoch told too');
    await flush();
    clock.advance(drainMs);
    assert.equal((await exitOf(agent)).error, undefined);
  });

  it('takes no event once it has ended: a late certificate change starts no Envoy', async () => {
    const { proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    proxy.exit(0, 'normal');
    assert.equal((await exitOf(agent)).error, undefined);
    agent.dispatch({ type: 'config-changed', config: 'B' });
    assert.deepEqual(proxy.starts, [{ epoch: 0, config: 'A' }]);
    assert.equal(agent.state.desired, 'A');
  });

  it('disposed: stops every epoch at once, without waiting for a drain', async () => {
    const { proxy, agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    proxy.live(0);
    await within(agent[Symbol.asyncDispose](), 5000, 'the disposal to end');
    assert.deepEqual(proxy.running, []);
    assert.equal((await exitOf(agent)).error, undefined);
    await agent[Symbol.asyncDispose](); // once ended: nothing left to stop
  });

  it('reports every event and the state after it to listeners', () => {
    const { agent } = setup();
    const seen: string[] = [];
    const off = agent.onEvent((event, state) => seen.push(`${event.type}:${state.live.length}`));
    agent.dispatch({ type: 'config-changed', config: 'A' });
    off();
    agent.dispatch({ type: 'config-changed', config: 'B' });
    assert.deepEqual(seen, ['config-changed:1']);
  });

  it('a spawned epoch\'s pid is in the state (epoch-spawned)', async () => {
    const { agent } = setup();
    agent.dispatch({ type: 'config-changed', config: 'A' });
    await Promise.resolve();
    assert.deepEqual(agent.state.live.map((entry) => [entry.epoch, entry.pid]), [[0, 100_000]]);
  });
});
