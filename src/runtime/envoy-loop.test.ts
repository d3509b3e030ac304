import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { test } from 'node:test';
import { recipeSetup } from '../../test/support/envoy-recipe.ts';
import { FakeProxy } from '../agent/fake-proxy.ts';
import type { FakeClock } from '../shared/clock.ts';
import { startEnvoyLoop } from './envoy-loop.ts';

test('at a shutdown with two epochs alive, the relay ends its streams before the first Envoy is stopped (a VM\'s WorkloadEntry)', async () => {
  const { ctx, dir } = await recipeSetup();
  const proxy = new FakeProxy();
  const told: string[] = [];
  const xds = { canConfigure: () => true, onGateChange: () => () => undefined, endStreams: () => void told.push(`endStreams with ${proxy.running.join(',')} running`) };
  const loop = startEnvoyLoop(ctx, { proxy, xds, choice: { configSuffix: '' } });
  try {
    loop.agent.dispatch({ type: 'config-changed', config: 'a' });
    await new Promise(setImmediate);
    proxy.live(0);
    loop.agent.dispatch({ type: 'config-changed', config: 'b' });
    await new Promise(setImmediate);
    proxy.live(1);
    assert.deepEqual(proxy.running, [0, 1], 'a hot restart: both epochs alive');
    loop.agent.dispatch({ type: 'shutdown' });
    await new Promise(setImmediate);
    assert.deepEqual(told, [], 'not while Envoy drains: it still serves');
    (ctx.clock as FakeClock).advance(ctx.config.terminationDrainDurationMs);
    await new Promise(setImmediate);
    assert.equal(told[0], 'endStreams with 0,1 running', 'before epoch 1 (the newest) is stopped; the relay takes later calls as done');
  } finally {
    await loop[Symbol.asyncDispose]();
    await rm(dir, { recursive: true, force: true });
  }
});
