import assert from 'node:assert/strict';
import { it } from 'node:test';
import { FakeProxy } from '../agent/fake-proxy.ts';
import type { Event } from '../agent/reconcile-types.ts';
import { silentLogger } from '../shared/log.ts';
import { fallBackToSotw, type XdsChoice } from './sotw-fallback.ts';

/** The parts the fallback talks to, recording what it tells them, in order. */
function parts(desired: string | undefined) {
  const told: string[] = [];
  let unimplemented: (() => void) | undefined;
  const relay = { onDeltaUnimplemented: (listener: () => void) => ((unimplemented = listener), () => (unimplemented = undefined)) };
  const agent = { state: { desired } as never, dispatch: (event: Event) => void told.push(`${event.type} ${'config' in event ? event.config : ''}`) };
  const gate = { certsChanged: (config: string) => void told.push(`gate ${config}`) };
  const proxy = Object.assign(new FakeProxy(), { useBootstrap: (text: string) => void told.push(`bootstrap ${text}`) });
  const xds: XdsChoice = { mode: 'delta', configSuffix: '' };
  const fallback = fallBackToSotw({ relay, agent, gate, proxy, xds, render: async () => 'sotw', logger: silentLogger });
  return { told, xds, fallback, unimplemented: () => unimplemented?.() };
}

it('Delta UNIMPLEMENTED: a SotW bootstrap, then the marked config told to the restart gate before the loop, once', async () => {
  const { told, xds, unimplemented } = parts('abc');
  unimplemented();
  await new Promise(setImmediate);
  assert.deepEqual(told, ['bootstrap sotw', 'gate abc+sotw', 'config-changed abc+sotw']);
  assert.deepEqual(xds, { mode: 'sotw', configSuffix: '+sotw' });
  unimplemented();
  await new Promise(setImmediate);
  assert.equal(told.length, 3, 'once per run');
});

it('before any certificate (no desired config): only the bootstrap and the mark', async () => {
  const { told, xds, unimplemented } = parts(undefined);
  unimplemented();
  await new Promise(setImmediate);
  assert.deepEqual(told, ['bootstrap sotw']);
  assert.equal(xds.configSuffix, '+sotw');
});
