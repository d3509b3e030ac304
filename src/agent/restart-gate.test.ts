import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../shared/clock.ts';
import type { Event, State } from './reconcile-types.ts';
import { RestartGate } from './restart-gate.ts';

const hour = 3_600_000;

/** A gate over a fake relay; `current` is the running epoch's config. */
function rig(options: { canConfigure: boolean; notAfter?: number }) {
  const clock = new FakeClock(0);
  const events: Event[] = [];
  let listener: (open: boolean) => void = () => undefined;
  const xds = {
    value: options.canConfigure,
    canConfigure: () => xds.value,
    onGateChange: (next: (open: boolean) => void) => ((listener = next), () => undefined),
  };
  const gate = new RestartGate({
    xds, clock, dispatch: (event) => events.push(event),
    state: () => ({ current: 'old' }) as State, readNotAfter: () => options.notAfter, expiryMarginMs: 10 * 60_000,
  });
  gate.certsChanged('old');
  gate.start();
  const opens = () => events.map((event) => (event as { open: boolean }).open);
  return { clock, gate, opens, setXds: (open: boolean) => ((xds.value = open), listener(open)) };
}

describe('RestartGate', () => {
  it('closed before any epoch ran: the next certificate change arms the running one\'s expiry', () => {
    const clock = new FakeClock(0);
    const events: Event[] = [];
    let current: string | undefined;
    let notAfter = 2 * hour;
    const gate = new RestartGate({
      xds: { canConfigure: () => false, onGateChange: () => () => undefined }, clock,
      dispatch: (event) => events.push(event), state: () => ({ current }) as State, readNotAfter: () => notAfter, expiryMarginMs: 10 * 60_000,
    });
    gate.start();
    gate.certsChanged('first');
    current = 'first';
    notAfter = 30 * hour;
    gate.certsChanged('second');
    clock.advance(2 * hour - 10 * 60_000);
    assert.deepEqual(events.map((event) => (event as { open: boolean }).open), [false, true]);
  });

  it('stays open (no event) while a new Envoy would get config', () => {
    assert.deepEqual(rig({ canConfigure: true, notAfter: 24 * hour }).opens(), []);
  });

  it('closes when it would not, and opens again when the relay can configure', () => {
    const { opens, setXds } = rig({ canConfigure: false, notAfter: 24 * hour });
    setXds(true);
    assert.deepEqual(opens(), [false, true]);
  });

  it('opens on its own ten minutes before the running certificate expires', () => {
    const { clock, opens } = rig({ canConfigure: false, notAfter: 2 * hour });
    clock.advance(2 * hour - 10 * 60_000 - 1);
    assert.deepEqual(opens(), [false]);
    clock.advance(1);
    assert.deepEqual(opens(), [false, true]);
  });

  it('an already expiring certificate never closes it; an unknown expiry never opens it', () => {
    assert.deepEqual(rig({ canConfigure: false, notAfter: 60_000 }).opens(), []);
    const unknown = rig({ canConfigure: false });
    unknown.clock.advance(1000 * hour);
    assert.deepEqual(unknown.opens(), [false]);
  });
});
