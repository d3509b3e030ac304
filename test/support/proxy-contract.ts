import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Proxy, ProxyExit } from '../../src/agent/proxy.ts';
import { within } from './within.ts';

/** What the contract needs besides the proxy: how to see an epoch's leftovers, and teardown. */
export interface ProxyHarness {
  proxy: Proxy;
  /** True while something the epoch wrote (its bootstrap) is still there. */
  hasLeftovers(epoch: number): Promise<boolean>;
  close(): Promise<void>;
}

interface Started {
  live: Promise<void>;
  exit: Promise<ProxyExit>;
  controller: AbortController;
}

function startEpoch(proxy: Proxy, epoch: number): Started {
  const controller = new AbortController();
  let onLive!: () => void;
  const live = new Promise<void>((resolve) => (onLive = resolve));
  const exit = proxy.run(epoch, `config-${epoch}`, { signal: controller.signal, onLive });
  return { live, exit, controller };
}

/**
 * The behaviour the agent relies on from any `Proxy`: run against the
 * FakeProxy next to the code and against the real Envoy in test/e2e.
 */
export function proxyContract(name: string, makeHarness: () => Promise<ProxyHarness>, waitMs = 500): void {
  describe(`Proxy contract: ${name}`, () => {
    let harness: ProxyHarness;
    before(async () => (harness = await makeHarness()));
    after(() => harness.close());

    it('an epoch reports LIVE, and aborting it ends it as "aborted"', async () => {
      const epoch = startEpoch(harness.proxy, 0);
      await within(epoch.live, waitMs, 'epoch 0 LIVE');
      epoch.controller.abort();
      assert.equal((await within(epoch.exit, waitMs, 'epoch 0 exit')).kind, 'aborted');
    });

    it('epoch 1 hot-restarts from epoch 0: it goes LIVE and the parent exits "normal"', async () => {
      const parent = startEpoch(harness.proxy, 0);
      await within(parent.live, waitMs, 'epoch 0 LIVE');
      const child = startEpoch(harness.proxy, 1);
      try {
        await within(child.live, waitMs, 'epoch 1 LIVE');
        assert.equal((await within(parent.exit, waitMs, 'epoch 0 exit')).kind, 'normal');
      } finally {
        child.controller.abort();
        parent.controller.abort();
        await Promise.all([child.exit, parent.exit]);
      }
    });

    it('cleanup removes what an exited epoch left behind', async () => {
      const epoch = startEpoch(harness.proxy, 0);
      await within(epoch.live, waitMs, 'epoch 0 LIVE');
      epoch.controller.abort();
      await epoch.exit;
      await harness.proxy.cleanup(0);
      assert.equal(await harness.hasLeftovers(0), false);
    });

    it('drain tells the serving epoch to drain and answers at once whether it took it; the epoch keeps running', async () => {
      const epoch = startEpoch(harness.proxy, 0);
      await within(epoch.live, waitMs, 'epoch 0 LIVE');
      // The wait is the agent's (drain-wait.ts): the proxy only tells, so it answers well under any drain duration.
      const drain = harness.proxy.drain({ signal: new AbortController().signal, skipExit: true });
      assert.equal(await within(drain, Math.min(waitMs, 5000), 'the drain call to answer'), true);
      const connections = await harness.proxy.activeConnections(new AbortController().signal);
      assert.ok(connections === undefined || connections === 0, `no connection was made, got ${connections}`);
      const stillRunning = await Promise.race([epoch.exit.then(() => 'exited'), new Promise((resolve) => setImmediate(resolve, 'running'))]);
      assert.equal(stillRunning, 'running');
      epoch.controller.abort();
      await epoch.exit;
    });
  });
}
