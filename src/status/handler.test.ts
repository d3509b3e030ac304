import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePrometheus } from '../../test/support/prometheus.ts';
import { handleReadinessHop, handleStatus, type StatusDeps, type StatusRequest } from './handler.ts';
import { answered } from '../../test/support/status-answer.ts';

interface Calls {
  quit: number;
  drain: number;
}

function fakeDeps(overrides: Partial<StatusDeps> = {}): StatusDeps & { calls: Calls } {
  const calls: Calls = { quit: 0, drain: 0 };
  return {
    calls,
    readiness: { check: async () => ({ ready: false, reason: 'config not received from the discovery server' }) },
    agentMetrics: async () => '# HELP istio_agent_up up\n# TYPE istio_agent_up gauge\nistio_agent_up 1\n',
    envoyMetrics: async () => ({ ok: true, status: 200, body: [Buffer.from('# TYPE envoy_server_live gauge\nenvoy_server_live 1\n')] }),
    epochs: () => ({ live: [{ epoch: 0, pid: 42 }] }),
    quit: () => void calls.quit++,
    drain: async () => (calls.drain++, true),
    ...overrides,
  };
}

const request = (method: string, url: string, remoteAddress = '127.0.0.1'): StatusRequest => ({ method, url, remoteAddress });

describe('status handlers', () => {
  it('/debug/ndsz: the name table for loopback peers (names left out with ?summary), 404 with DNS off, 403 from the pod network', async () => {
    const asked: boolean[] = [];
    const deps = fakeDeps({
      dns: {
        debug: (withTable) => (
          asked.push(withTable),
          { loaded: true, version: 'v1', ...(withTable ? { table: { 'db.legacy.internal': ['240.240.0.1'] } } : {}) }
        ),
      },
    });
    const whole = await answered(deps, request('GET', '/debug/ndsz'));
    assert.equal(whole.status, 200);
    assert.deepEqual(JSON.parse(whole.body), { loaded: true, version: 'v1', table: { 'db.legacy.internal': ['240.240.0.1'] } });
    assert.equal((await answered(deps, request('GET', '/debug/ndsz?summary'))).status, 200);
    assert.deepEqual(asked, [true, false]);
    assert.equal((await answered(deps, request('GET', '/debug/ndsz', '10.0.0.9'))).status, 403);
    assert.equal((await answered(fakeDeps(), request('GET', '/debug/ndsz'))).status, 404);
  });

  it('answers 503 with the reason until ready, then 200', async () => {
    const deps = fakeDeps();
    const notReady = await answered(deps, request('GET', '/healthz/ready'));
    assert.equal(notReady.status, 503);
    assert.match(notReady.body, /config not received/);
    deps.readiness = { check: async () => ({ ready: true }) };
    assert.equal((await answered(deps, request('GET', '/healthz/ready?x=1'))).status, 200);
  });

  it('serves the agent metrics then Envoy\'s, as valid text format', async () => {
    const response = await answered(fakeDeps(), request('GET', '/stats/prometheus'));
    assert.equal(response.status, 200);
    assert.match(response.contentType, /^text\/plain; version=0\.0\.4/);
    assert.ok(response.body.indexOf('istio_agent_up') < response.body.indexOf('envoy_server_live'));
    assert.deepEqual([...parsePrometheus(response.body).keys()], ['istio_agent_up', 'envoy_server_live']);
  });

  it('serves the text format whatever the Accept, Prometheus\'s default (OpenMetrics first) too: Envoy\'s counters keep their names', async () => {
    const envoyText = '# TYPE envoy_cluster_upstream_rq counter\nenvoy_cluster_upstream_rq 3\n# TYPE envoy_cluster_upstream_rq_total counter\nenvoy_cluster_upstream_rq_total 5\n';
    const deps = fakeDeps({ envoyMetrics: async () => ({ ok: true, status: 200, body: [Buffer.from(envoyText)] }) });
    const accept = 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1';
    for (const headers of [{ accept }, {}, { accept: 'application/openmetrics-text' }]) {
      const answer = await answered(deps, { ...request('GET', '/stats/prometheus'), ...headers });
      assert.match(answer.contentType, /^text\/plain; version=0\.0\.4/);
      assert.ok(answer.body.endsWith(envoyText), 'Envoy\'s part as Envoy wrote it');
      assert.deepEqual([...parsePrometheus(answer.body).keys()].slice(-2), ['envoy_cluster_upstream_rq', 'envoy_cluster_upstream_rq_total']);
    }
  });

  it('serves the same merged metrics on /metrics, counting each scrape and each failed part', async () => {
    const counted: string[] = [];
    const deps = fakeDeps({
      scrapes: { scraped: () => counted.push('scrape'), failed: (type) => counted.push(type) },
      envoyMetrics: async () => ({ ok: false, error: 'down' }),
    });
    const response = await answered(deps, request('GET', '/metrics', '10.0.0.1'));
    assert.equal(response.status, 200);
    assert.deepEqual([...parsePrometheus(response.body).keys()], ['istio_agent_up']);
    assert.deepEqual(counted, ['scrape', 'envoy']);
  });

  it('leaves Envoy\'s stats out when told to (PILOT_AGENT_MERGE_ENVOY_STATS=false: no envoyMetrics)', async () => {
    const response = await answered(fakeDeps({ envoyMetrics: undefined }), request('GET', '/stats/prometheus'));
    assert.equal(response.body, '# HELP istio_agent_up up\n# TYPE istio_agent_up gauge\nistio_agent_up 1\n');
  });

  it('still serves the agent part when Envoy admin is down', async () => {
    const deps = fakeDeps({ envoyMetrics: async () => ({ ok: false, error: 'TypeError: fetch failed\nECONNREFUSED' }) });
    const response = await answered(deps, request('GET', '/stats/prometheus'));
    assert.equal(response.status, 200);
    assert.match(response.body, /^# Envoy metrics unavailable: TypeError: fetch failed ECONNREFUSED$/m);
    assert.deepEqual([...parsePrometheus(response.body).keys()], ['istio_agent_up']);
  });

  it('quits only after answering, and only for local POSTs', async () => {
    const deps = fakeDeps();
    const response = await answered(deps, request('POST', '/quitquitquit'));
    assert.equal(response.status, 200);
    assert.equal(deps.calls.quit, 0, 'not before the answer is sent');
    response.after?.();
    assert.equal(deps.calls.quit, 1);
    assert.equal((await answered(deps, request('POST', '/quitquitquit', '10.1.2.3'))).status, 403);
    assert.equal((await answered(deps, request('GET', '/quitquitquit'))).status, 405);
  });

  it('drains for local callers and refuses others', async () => {
    const deps = fakeDeps();
    assert.equal((await answered(deps, request('POST', '/drain', '::ffff:127.0.0.1'))).status, 200);
    assert.equal((await answered(deps, request('POST', '/drain', '192.168.1.5'))).status, 403);
    assert.equal(deps.calls.drain, 1);
  });

  it('a drain Envoy refused is 502, not OK', async () => {
    const refused = await answered(fakeDeps({ drain: async () => false }), request('POST', '/drain'));
    assert.equal(refused.status, 502);
    assert.match(refused.body, /Envoy refused the drain calls/);
  });

  it('serves the debug JSON; /debug/xds is 404 without a relay', async () => {
    const epochs = await answered(fakeDeps(), request('GET', '/debug/epochs'));
    assert.deepEqual(JSON.parse(epochs.body), { live: [{ epoch: 0, pid: 42 }] });
    assert.equal((await answered(fakeDeps(), request('GET', '/debug/xds'))).status, 404);
    const xds = await answered(
      fakeDeps({ xds: { debug: () => ({ cds: { version: '1' } }), servingLastKnownGoodSince: () => undefined } }),
      request('GET', '/debug/xds'),
    );
    assert.deepEqual(JSON.parse(xds.body), { cds: { version: '1' } });
  });

  it('/debug/sds: the SDS server\'s view as indented JSON for loopback peers, 404 without it, 403 from the pod network', async () => {
    const view = { streams: [{ id: 1, resources: ['default'] }] };
    const sds = await answered(fakeDeps({ sds: { debug: () => view } }), request('GET', '/debug/sds'));
    assert.deepEqual(
      { status: sds.status, contentType: sds.contentType, body: sds.body },
      { status: 200, contentType: 'application/json', body: `${JSON.stringify(view, null, 2)}\n` },
    );
    const off = await answered(fakeDeps(), request('GET', '/debug/sds'));
    assert.deepEqual({ status: off.status, body: JSON.parse(off.body) }, { status: 404, body: { error: 'the SDS server is not running' } });
    assert.equal((await answered(fakeDeps({ sds: { debug: () => view } }), request('GET', '/debug/sds', '10.1.2.3'))).status, 403);
  });

  it('answers 404 for unknown paths and 500 when a handler throws', async () => {
    assert.equal((await answered(fakeDeps(), request('GET', '/nope'))).status, 404);
    assert.equal((await answered(fakeDeps(), request('GET', '/__proto__'))).status, 404);
    const failing = fakeDeps({ epochs: () => { throw new Error('boom'); } });
    const response = await answered(failing, request('GET', '/debug/epochs'));
    assert.equal(response.status, 500);
    assert.match(response.body, /boom/);
  });

  it('refuses every non-canonical spelling of a path, whatever it would resolve to', async () => {
    const targets = [
      '/healthz/ready/../../quitquitquit', '/healthz/ready/%2e%2e/%2E%2E/quitquitquit', '/./quitquitquit', '//quitquitquit',
      '/debug//epochs', '/debug/epochs/', '/debug\\epochs', '/%71uitquitquit', '/quitquitquit;x', 'http://status/quitquitquit', '*', '',
    ];
    for (const url of targets) {
      const deps = fakeDeps();
      const response = await answered(deps, request('POST', url));
      assert.equal(response.status, 404, url);
      response.after?.();
      assert.deepEqual(deps.calls, { quit: 0, drain: 0 }, url);
    }
  });

  it('answers debug endpoints to loopback peers only', async () => {
    for (const path of ['/debug/epochs', '/debug/xds']) {
      assert.equal((await answered(fakeDeps(), request('GET', path, '10.1.2.3'))).status, 403, path);
    }
  });

  it('takes only 127.0.0.1 and ::1 as loopback: 127.0.0.6 may be the network relayed by Envoy', async () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      assert.equal((await answered(fakeDeps(), request('POST', '/drain', address))).status, 200, address);
    }
    for (const address of ['127.0.0.6', '127.1.2.3', '::ffff:127.0.0.6', '10.0.0.1', '', '0.0.0.0', '::']) {
      assert.equal((await answered(fakeDeps(), request('POST', '/drain', address))).status, 403, address);
    }
  });

  it('serves only readiness to Envoy\'s readiness hop, and never takes it for a local caller', async () => {
    const deps = fakeDeps({ readiness: { check: async () => ({ ready: true }) } });
    assert.equal((await handleReadinessHop(deps, request('GET', '/healthz/ready'))).status, 200);
    for (const [method, url] of [
      ['POST', '/quitquitquit'],
      ['POST', '/drain'],
      ['GET', '/debug/epochs'],
      ['GET', '/stats/prometheus'],
      ['POST', '/healthz/ready/../../quitquitquit'],
    ]) {
      const response = await handleReadinessHop(deps, request(method!, url!, '127.0.0.1'));
      assert.equal(response.status, 404, url);
      response.after?.();
    }
    assert.deepEqual(deps.calls, { quit: 0, drain: 0 });
  });
});
