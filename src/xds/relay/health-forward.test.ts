import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lenField } from '../../grpc/proto-wire.ts';
import type { HealthReport, HealthReportSource } from '../../discovery/consumers.ts';
import { healthInfoType, listenerType } from '../../discovery/type-urls.ts';
import { readRequest, type XdsMode } from '../../discovery/wire.ts';
import { FakeAdsStream } from './fake-ads-stream.ts';
import { fakeRelayContext, recordingLogger } from './fake-relay-context.ts';
import { FakeUpstream } from './fake-upstream.ts';
import { RelayStream } from './relay-stream.ts';

const clusterType = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const typeField = { sotw: 4, delta: 2 } as const;
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A source as the health room keeps it: the last report, and its listeners. */
function reports(): HealthReportSource & { report(next: HealthReport): void; listeners(): number } {
  let last: HealthReport | undefined;
  const listeners = new Set<(report: HealthReport) => void>();
  return {
    current: () => last,
    subscribe: (listener) => (listeners.add(listener), () => void listeners.delete(listener)),
    report: (next) => ((last = next), listeners.forEach((listener) => listener(next))),
    listeners: () => listeners.size,
  };
}

async function relayedStream(mode: XdsMode, health: HealthReportSource) {
  const kit = fakeRelayContext();
  kit.context.health = health;
  const upstream = kit.script[0] as FakeUpstream;
  const ads = new FakeAdsStream();
  const stream = new RelayStream({ id: 1, mode, ads, context: kit.context, logger: recordingLogger().logger });
  const done = stream.run();
  await settle();
  upstream.answer();
  const envoyAsks = (typeUrl: string) => ads.request(lenField(typeField[mode], typeUrl));
  const sent = () => upstream.messages().map((message) => readRequest(message, mode)).filter((fields) => fields.typeUrl === healthInfoType);
  return { stream, done, envoyAsks, health: sent };
}

describe('health reports on the upstream stream (istio.v1.HealthInformation)', () => {
  for (const mode of ['sotw', 'delta'] as const) {
    it(`${mode}: none before Envoy asked for listeners; then the last report, and each new one, a failure with its reason`, async () => {
      const source = reports();
      source.report({ healthy: true });
      const relayed = await relayedStream(mode, source);
      relayed.envoyAsks(clusterType);
      assert.deepEqual(relayed.health(), []);
      relayed.envoyAsks(listenerType);
      assert.deepEqual(relayed.health().map((fields) => fields.error), [undefined]);
      source.report({ healthy: false, message: 'app answered 503' });
      assert.deepEqual(relayed.health().map((fields) => fields.error), [undefined, 'app answered 503']);
      relayed.envoyAsks(listenerType);
      assert.equal(relayed.health().length, 2, 'a second LDS request repeats nothing');
      relayed.stream.stop();
      await relayed.done;
      assert.equal(source.listeners(), 0, 'an ended stream hears no more reports');
    });
  }

  it('a new stream (a reconnect) repeats the last report once Envoy asked for listeners; none before the first report', async () => {
    const source = reports();
    const first = await relayedStream('sotw', source);
    first.envoyAsks(listenerType);
    assert.deepEqual(first.health(), []);
    source.report({ healthy: false, message: 'tcp probe failed' });
    first.stream.stop();
    const second = await relayedStream('sotw', source);
    second.envoyAsks(listenerType);
    assert.deepEqual(second.health().map((fields) => fields.error), ['tcp probe failed']);
    second.stream.stop();
    await Promise.all([first.done, second.done]);
  });
});
