import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import type { Event, State } from './reconcile-types.ts';
import { defaultExpiryMarginMs, RestartGate } from './restart-gate.ts';

/** Edges of restart-gate.test.ts that mutation testing showed untested. */
const hour = 3_600_000;
const margin = 10 * 60_000;

/** A gate whose clock starts far from 0, so a delay computed from absolute times shows. */
function rig(options: { canConfigure: boolean; notAfter?: () => number | undefined; running?: string; start?: number }) {
  const clock = new FakeClock(options.start ?? 1000 * hour);
  const events: Event[] = [];
  const state: Pick<State, 'current' | 'gate'> = { current: options.running ?? 'A', gate: { state: 'open' } };
  let unsubscribed = 0;
  const gate = new RestartGate({
    xds: { canConfigure: () => options.canConfigure, onGateChange: () => () => void unsubscribed++ },
    clock, dispatch: (event) => events.push(event), state: () => state as State,
    readNotAfter: options.notAfter ?? (() => undefined), expiryMarginMs: margin,
  });
  return { clock, gate, events, state, unsubscribed: () => unsubscribed };
}

describe('RestartGate, edges', () => {
  it('the default margin is ten minutes', () => {
    assert.equal(defaultExpiryMarginMs, 10 * 60_000);
  });

  it('start() looks at once: a gate that cannot configure closes without waiting for a change, and says why', () => {
    const { gate, events } = rig({ canConfigure: false });
    gate.start();
    assert.deepEqual(events, [
      { type: 'gate-changed', open: false, reason: 'the discovery server cannot be reached and no last-known-good config covers what Envoy needs' },
    ]);
  });

  it('opens at the margin counted on the clock\'s own time, saying which certificate expires', () => {
    const start = 1000 * hour;
    const { clock, gate, events } = rig({ canConfigure: false, notAfter: () => start + 2 * hour, start });
    gate.certsChanged('A');
    gate.start();
    clock.advance(2 * hour - margin - 1);
    assert.equal(events.length, 1);
    clock.advance(1);
    assert.deepEqual(events.at(-1), {
      type: 'gate-changed',
      open: true,
      reason: `the running certificate expires at ${new Date(start + 2 * hour).toISOString()}: a restart without xDS config is no worse`,
    });
  });

  it('a re-read of the same files that cannot tell their expiry keeps the expiry it knew', () => {
    let notAfter: number | undefined = 1000 * hour + 2 * hour;
    const { clock, gate, events } = rig({ canConfigure: false, notAfter: () => notAfter });
    gate.certsChanged('A');
    gate.start();
    notAfter = undefined;
    gate.certsChanged('A');
    clock.advance(2 * hour - margin);
    assert.deepEqual(events.map((event) => (event as { open: boolean }).open), [false, true]);
  });

  it('opens with a reason when the relay can configure again', () => {
    let canConfigure = false;
    const clock = new FakeClock(0);
    const events: Event[] = [];
    const gate = new RestartGate({
      xds: { canConfigure: () => canConfigure, onGateChange: () => () => undefined }, clock,
      dispatch: (event) => events.push(event), state: () => ({ current: 'A' }) as State, readNotAfter: () => undefined, expiryMarginMs: margin,
    });
    gate.start();
    canConfigure = true;
    gate.evaluate();
    assert.deepEqual(events.at(-1), {
      type: 'gate-changed',
      open: true,
      reason: 'a new Envoy gets config: the discovery server is reachable or last-known-good config covers it',
    });
  });

  it('stop() cancels the expiry wake-up and unsubscribes from the relay', () => {
    const { clock, gate, unsubscribed } = rig({ canConfigure: false, notAfter: () => 1000 * hour + 2 * hour });
    gate.certsChanged('A');
    gate.start();
    assert.equal(clock.pending, 1);
    gate.stop();
    assert.equal(clock.pending, 0);
    assert.equal(unsubscribed(), 1);
    rig({ canConfigure: true }).gate.stop(); // never started: nothing to cancel, no throw
  });
});
