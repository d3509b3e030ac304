import assert from 'node:assert/strict';
import { it } from 'node:test';
import { FakeProxy } from '../agent/fake-proxy.ts';
import type { Event } from '../agent/reconcile-types.ts';
import type { XdsMode } from '../discovery/wire.ts';
import { FakeClock } from '../shared/clock.ts';
import { silentLogger } from '../shared/log.ts';
import { epochRequests, type XdsChoice } from './envoy-loop.ts';
import { fallBackToSotw } from './sotw-fallback.ts';

const settle = () => new Promise(setImmediate);

/** The parts the fallback talks to, recording what it tells them, in order; the desired config follows what it dispatches. */
function parts(initial: string | undefined) {
  const told: string[] = [];
  let unimplemented: ((mode: XdsMode) => void) | undefined;
  const relay = { onUnimplemented: (listener: (mode: XdsMode) => void) => ((unimplemented = listener), () => (unimplemented = undefined)) };
  const state = { desired: initial };
  const agent = {
    state: state as never,
    dispatch: (event: Event) => {
      told.push(`${event.type} ${'config' in event ? event.config : ''}`);
      if (event.type === 'config-changed') state.desired = event.config;
    },
  };
  const gate = { certsChanged: (config: string) => void told.push(`gate ${config}`) };
  const proxy = Object.assign(new FakeProxy(), { useBootstrap: (text: string) => void told.push(`bootstrap ${text}`) });
  const xds: XdsChoice = { mode: 'delta', configSuffix: '' };
  const clock = new FakeClock();
  const bootstraps = { delta: 'delta', sotw: async () => 'sotw' };
  const requestEpoch = epochRequests({ gate, agent, choice: xds });
  const fallback = fallBackToSotw({ relay, agent, requestEpoch, proxy, xds, bootstraps, clock, logger: silentLogger });
  return { told, xds, clock, fallback, unimplemented: (mode: XdsMode) => unimplemented?.(mode) };
}

it('Delta UNIMPLEMENTED: a SotW bootstrap, then the marked config told to the restart gate before the loop, at once', async () => {
  const { told, xds, unimplemented } = parts('abc');
  unimplemented('delta');
  await settle();
  assert.deepEqual(told, ['bootstrap sotw', 'gate abc+sotw', 'config-changed abc+sotw']);
  assert.deepEqual(xds, { mode: 'sotw', configSuffix: '+sotw' });
  unimplemented('delta');
  await settle();
  assert.equal(told.length, 3, 'a late Delta stream changes nothing once on SotW');
});

it('before any certificate (no desired config): only the bootstrap and the mark', async () => {
  const { told, xds, unimplemented } = parts(undefined);
  unimplemented('delta');
  await settle();
  assert.deepEqual(told, ['bootstrap sotw']);
  assert.equal(xds.configSuffix, '+sotw');
});

it('SotW UNIMPLEMENTED too: back to Delta after 1 s (the same files, unmarked), then each switch waits twice as long', async () => {
  const { told, xds, clock, unimplemented } = parts('abc');
  unimplemented('delta');
  await settle();
  told.length = 0;
  unimplemented('sotw');
  clock.advance(999);
  await settle();
  assert.deepEqual(told, [], 'not before 1 s');
  unimplemented('sotw');
  clock.advance(1);
  await settle();
  assert.deepEqual(told, ['bootstrap delta', 'gate abc', 'config-changed abc'], 'once, however many streams said it');
  assert.deepEqual(xds, { mode: 'delta', configSuffix: '' });
  told.length = 0;
  unimplemented('delta');
  clock.advance(1999);
  await settle();
  assert.deepEqual(told, []);
  clock.advance(1);
  await settle();
  assert.deepEqual(told, ['bootstrap sotw', 'gate abc+sotw', 'config-changed abc+sotw']);
});

it('disposed: a switch that waits never happens', async () => {
  const { told, clock, fallback, unimplemented } = parts('abc');
  unimplemented('delta');
  await settle();
  told.length = 0;
  unimplemented('sotw');
  fallback[Symbol.dispose]();
  clock.advance(60_000);
  await settle();
  assert.deepEqual(told, []);
});
