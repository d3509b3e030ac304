import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Registry } from '../../src/metrics/index.ts';
import { systemClock } from '../../src/shared/clock.ts';
import { silentLogger } from '../../src/shared/log.ts';
import { LastKnownGoodConfig } from '../../src/xds/last-known-good/config.ts';
import { lenField } from '../../src/grpc/proto-wire.ts';
import { XdsRelay } from '../../src/xds/relay/relay.ts';
import { AdsTestClient, sotwRequest } from '../support/ads-client.ts';
import { suiteCleanup, tempDir } from '../support/cleanup.ts';
import { freePort } from '../support/ports.ts';

const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const failures = async (registry: Registry) =>
  Number(/ (\d+)$/m.exec(await registry.getSingleMetricAsString('istio_agent_xds_proxy_upstream_failures_total'))?.[1] ?? 0);

describe('last-known-good in the relay: a grpc-js ADS client, nothing listening upstream', () => {
  let dir: string;
  let relay: XdsRelay;
  const registry = new Registry();
  const clients: AdsTestClient[] = [];

  const cleanup = suiteCleanup();

  before(async () => {
    dir = await tempDir(cleanup, 'lkg-relay-');
    const lastKnownGood = new LastKnownGoodConfig();
    lastKnownGood.keepSotw(
      cds,
      'v7',
      [Buffer.concat([lenField(1, 'v7'), lenField(2, lenField(1, cds)), lenField(4, cds), lenField(5, 'server-nonce')])],
      Date.now(),
    );
    // A redial far away: every dial in these tests is one a stream made itself.
    relay = new XdsRelay({
      socketPath: join(dir, 'XDS'),
      upstream: { address: { host: '127.0.0.1', port: await freePort() }, policy: 'NONE', certDir: dir },
      registry,
      clock: systemClock,
      logger: silentLogger,
      lastKnownGood,
      backoff: { initialMs: 600_000, multiplier: 1, jitter: 0, maxMs: 600_000 },
    });
    await relay.start();
    cleanup.defer(() => relay.stop());
    cleanup.defer(() => clients.forEach((client) => client.close()));
  });

  const connect = () => {
    const client = new AdsTestClient(`unix://${join(dir, 'XDS')}`);
    clients.push(client);
    client.send(sotwRequest({ typeUrl: cds, nodeId: 'sidecar~1~a~b' }));
    return client;
  };

  describe('a stream whose dial is refused', () => {
    let client: AdsTestClient;
    let response: Awaited<ReturnType<AdsTestClient['waitForResponses']>>;
    before(async () => {
      client = connect();
      response = await client.waitForResponses(1);
    });

    it('gets the kept response with a fresh nonce', async () => {
      assert.equal(response.version, 'v7');
      assert.match(response.nonce, /^lkg-\d+-\d+-1$/);
      assert.equal(response.resources, 1);
      assert.equal(await failures(registry), 1);
      assert.ok(relay.servingLastKnownGoodSince() !== undefined);
    });

    it('gets nothing more for its ACK', async () => {
      client.send(sotwRequest({ typeUrl: cds, version: 'v7', nonce: 'not ours' }));
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(client.responses.length, 1, 'each type once: an ACK (auto) and an unknown nonce get nothing');
    });
  });

  it('once a dial failed, the next stream is served at once, without waiting on another dial', async () => {
    const client = connect();
    await client.waitForResponses(1);
    assert.equal(await failures(registry), 1, 'no second dial');
  });
});
