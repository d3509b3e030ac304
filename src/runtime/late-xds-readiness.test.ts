import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LateXdsReadiness } from './late-xds-readiness.ts';

/** A relay's readiness the test turns by hand. */
function fakeRelay(open: boolean) {
  const listeners = new Set<(open: boolean) => void>();
  return {
    canConfigure: () => open,
    onGateChange: (listener: (open: boolean) => void) => (listeners.add(listener), () => void listeners.delete(listener)),
    set(next: boolean) {
      open = next;
      for (const listener of listeners) listener(next);
    },
    listeners,
  };
}

describe('the restart gate reads the relay once it has started', () => {
  it('answers as a relay that has not dialled yet (available) before one attaches', () => {
    assert.equal(new LateXdsReadiness().canConfigure(), true);
  });

  for (const [name, relayOpen, told] of [
    ['a relay that cannot configure closes the gate as it attaches', false, [false]],
    ['a relay that can tells nothing new', true, []],
  ] as const) {
    it(name, () => {
      const readiness = new LateXdsReadiness();
      const heard: boolean[] = [];
      readiness.onGateChange((open) => heard.push(open));
      readiness.attach(fakeRelay(relayOpen));
      assert.deepEqual(heard, told);
      assert.equal(readiness.canConfigure(), relayOpen);
    });
  }

  it("passes the relay's changes on until undone; an unsubscribed listener hears nothing", () => {
    const readiness = new LateXdsReadiness();
    const relay = fakeRelay(true);
    const heard: boolean[] = [];
    const quiet: boolean[] = [];
    readiness.onGateChange((open) => heard.push(open));
    readiness.onGateChange((open) => quiet.push(open))();
    const undo = readiness.attach(relay);
    relay.set(false);
    relay.set(true);
    assert.deepEqual(heard, [false, true]);
    assert.deepEqual(quiet, []);
    undo();
    assert.equal(relay.listeners.size, 0, 'no longer listening to the relay');
    relay.set(false);
    assert.deepEqual(heard, [false, true]);
    assert.equal(readiness.canConfigure(), true, 'back to the answer before the relay');
  });
});
