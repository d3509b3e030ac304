import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { TimerHost } from './clock.ts';
import { boundSend } from './send-timeout.ts';

/** One-timer host: enough for one send timeout. */
function fakeHost() {
  let now = 0;
  const pending = new Map<number, { at: number; callback: () => void }>();
  let next = 0;
  const host: TimerHost = {
    setTimeout: (callback, ms) => (pending.set(++next, { at: now + ms, callback }), next),
    clearTimeout: (handle) => void pending.delete(handle as number),
    monotonicNow: () => now,
  };
  const advance = (ms: number) => {
    now += ms;
    for (const [id, timer] of pending) if (timer.at <= now) (pending.delete(id), timer.callback());
  };
  return { host, advance, armed: () => pending.size };
}

class FakeResponse extends EventEmitter {
  destroyed = 0;
  destroy(): void {
    this.destroyed++;
  }
}

test('boundSend destroys a response still unsent at the bound, not before', () => {
  const clock = fakeHost();
  const response = new FakeResponse();
  boundSend(response, 10_000, clock.host);
  clock.advance(9_999);
  assert.equal(response.destroyed, 0);
  clock.advance(1);
  assert.equal(response.destroyed, 1);
});

test('boundSend leaves a response that closed in time alone', () => {
  const clock = fakeHost();
  const response = new FakeResponse();
  boundSend(response, 10_000, clock.host);
  clock.advance(5_000);
  response.emit('close');
  assert.equal(clock.armed(), 0, 'the timer goes with the response');
  clock.advance(60_000);
  assert.equal(response.destroyed, 0);
});
