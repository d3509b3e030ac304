import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Gauge, Registry } from '../metrics/index.ts';
import { FakeClock } from '../shared/clock.ts';
import { adminClient } from '../envoy/admin.ts';
import { silentLogger } from '../shared/log.ts';
import { handleStatus } from './handler.ts';
import { envoyMetricsCapBytes } from './prometheus.ts';
import { statusDeps, type StartStatusOptions } from './status.ts';
import { answered } from '../../test/support/status-answer.ts';

/** Stands in for Envoy's admin: /stats/prometheus never ends, as fast as the agent reads it. */
function endlessAdmin() {
  let hungUp: () => void = () => undefined;
  const seen = { bytes: 0, closed: new Promise<void>((resolve) => (hungUp = resolve)) };
  const block = Array.from({ length: 1000 }, (_, i) => `envoy_cluster_upstream_rq{cluster="c${i}"} 1\n`).join('');
  const stream = (response: ServerResponse) => {
    let open = true;
    response.on('close', () => ((open = false), hungUp()));
    const pump = () => {
      while (open && response.write(block)) seen.bytes += block.length;
      if (open) response.once('drain', pump);
    };
    pump();
  };
  const server = createServer((request, response) => (request.url === '/stats/prometheus' ? stream(response) : response.writeHead(404).end()));
  return { server, seen };
}

/** The status deps as run-proxy wires them, with Envoy's admin on `adminPort` and nothing else behind them. */
function wiredDeps(adminPort: number) {
  const registry = new Registry();
  new Gauge({ name: 'istio_agent_up', help: 'up', registers: [registry] }).set(1);
  const options = {
    port: 0, readinessSocketPath: '', adminPort, admin: adminClient(adminPort),
    agent: { state: {}, dispatch: () => undefined, stopNow: () => undefined, requestDrain: async () => true },
    epochs: {}, registry,
    clock: new FakeClock(), logger: silentLogger,
  } as unknown as StartStatusOptions;
  return statusDeps(options);
}

describe('/stats/prometheus as wired: Envoy\'s part is capped at 32 MiB', () => {
  const { server, seen } = endlessAdmin();
  let port = 0;
  before(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => ((port = (server.address() as { port: number }).port), resolve()))));
  after(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));

  it('an admin that never stops sending is cut at the cap on a whole line, noted, and hung up on', async () => {
    const response = await answered(wiredDeps(port), { method: 'GET', url: '/stats/prometheus', remoteAddress: '10.0.0.1' });
    assert.equal(response.status, 200);
    const body = String(response.body);
    assert.ok(body.startsWith('# HELP istio_agent_up up\n# TYPE istio_agent_up gauge\nistio_agent_up 1\n'), 'the agent\'s part first, whole');
    const envoyPart = body.slice(body.indexOf('envoy_cluster_upstream_rq'), body.lastIndexOf('# Envoy metrics truncated'));
    assert.ok(envoyPart.length <= envoyMetricsCapBytes && envoyPart.length > envoyMetricsCapBytes - 1000, `Envoy's part is ${envoyPart.length} bytes`);
    assert.equal(envoyMetricsCapBytes, 32 * 1024 * 1024, 'the cap docs/status-and-metrics.md states');
    assert.match(body.slice(-200), /\} 1\n# Envoy metrics truncated at the size cap\n$/);
    const bound = AbortSignal.timeout(5000);
    await Promise.race([
      seen.closed,
      new Promise((_, reject) => bound.addEventListener('abort', () => reject(new Error('the agent never closed the admin response')))),
    ]);
    assert.ok(seen.bytes < 2 * envoyMetricsCapBytes, `it stopped reading near the cap (${seen.bytes} bytes sent)`);
  });
});
