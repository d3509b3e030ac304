import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { before, describe, it } from 'node:test';
import { mergePrometheusAnnotations } from '../../src/inject/prometheus-merge.ts';
import { startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { parsePrometheus } from '../support/prometheus.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { get, waitForStatus } from '../support/status-agent.ts';

const appText = [
  '# HELP app_requests_total Requests the app served',
  '# TYPE app_requests_total counter',
  'app_requests_total{code="200"} 7',
  '# HELP istio_agent_retry_budget The app reusing an agent family name',
  '# TYPE istio_agent_retry_budget gauge',
  '',
].join('\n');

type Mode = 'ok' | 'slow' | 'error' | 'endless';

type Families = ReturnType<typeof parsePrometheus>;

/** Istio's istio_agent_scrape_failures_total{type} series, 0 until its first failure. */
function scrapeFailures(families: Families, type: string): string {
  const series = families.get('istio_agent_scrape_failures_total')?.metrics as { labels?: Record<string, string>; value: string }[] | undefined;
  return series?.find((metric) => metric.labels?.type === type)?.value ?? '0';
}

/** Metric lines without end, written as fast as the reader takes them, until it hangs up. */
function streamEndlessly(response: ServerResponse, app: { endlessBytes: number; endlessClosed: boolean }): void {
  response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
  const block = Array.from({ length: 1000 }, (_, i) => `app_endless{line="${i}"} 1\n`).join('');
  let open = true;
  response.on('close', () => ((open = false), (app.endlessClosed = true)));
  const pump = () => {
    while (open && response.write(block)) app.endlessBytes += block.length;
    if (open) response.once('drain', pump);
  };
  pump();
}

/** The app's metrics endpoint, whose behaviour the test switches. */
async function startMetricsApp() {
  const app = { mode: 'ok' as Mode, scrapes: 0, endlessBytes: 0, endlessClosed: false };
  const server: Server = createServer((request, response) => {
    app.scrapes++;
    if (request.url !== '/custom/metrics') return void response.writeHead(404).end();
    if (app.mode === 'slow') return;
    if (app.mode === 'error') return void response.writeHead(500).end('boom');
    if (app.mode === 'endless') return streamEndlessly(response, app);
    response.end(appText);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { app, port: (server.address() as { port: number }).port, close: () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  } };
}

describe('/stats/prometheus merges the app\'s metrics from ISTIO_PROMETHEUS_ANNOTATIONS, with the real Envoy', () => {
  let upstream: Upstream;
  let peer: Peer;
  let metricsApp: Awaited<ReturnType<typeof startMetricsApp>>;
  let agent: RunningAgent;
  let statusPort: number;

  const cleanup = suiteCleanup();

  before(async () => {
    upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    metricsApp = await startMetricsApp();
    cleanup.defer(() => metricsApp.close());
    statusPort = await freePort();
    // Exactly what our injector writes for a pod annotated with port and path but no scrape: "scrape": "".
    const injected = mergePrometheusAnnotations({ 'prometheus.io/port': String(metricsApp.port), 'prometheus.io/path': '/custom/metrics' }, 15020, 'pod');
    agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
      env: { ISTIO_PROMETHEUS_ANNOTATIONS: injected!.env! },
    });
    deferStop(cleanup, agent);
    await waitForStatus(statusPort, '/stats/prometheus', (answer) => answer.body.includes('envoy_server_live'), 30_000);
  });

  /** One scrape: it parses, and the agent's and Envoy's parts are whole. */
  async function scrape() {
    const answer = await get(statusPort, '/stats/prometheus');
    assert.equal(answer.status, 200);
    const families = parsePrometheus(answer.body);
    assert.equal(families.get('istio_agent_epochs_started_total')?.metrics[0]?.value, '1', 'the agent\'s part');
    assert.ok(families.has('envoy_server_live'), 'Envoy\'s part');
    return { text: answer.body, families };
  }

  it('merges the app\'s metrics after the agent\'s and Envoy\'s, and the result parses', async () => {
    const { text, families } = await scrape();
    assert.equal(families.get('app_requests_total')?.metrics[0]?.value, '7');
    assert.ok(text.indexOf('envoy_server_live') < text.indexOf('app_requests_total'), 'app last');
    assert.equal(scrapeFailures(families, 'application'), '0');
  });

  it('serves the same merged metrics on /metrics, Prometheus\'s default path, as Istio\'s status port', async () => {
    const answer = await get(statusPort, '/metrics');
    assert.equal(answer.status, 200);
    const families = parsePrometheus(answer.body);
    for (const name of ['istio_agent_epochs_started_total', 'envoy_server_live', 'app_requests_total']) assert.ok(families.has(name), name);
    assert.ok(Number(families.get('istio_agent_scrapes_total')?.metrics[0]?.value) >= 2, 'istio_agent_scrapes_total counts every scrape');
  });

  it('records istio_agent_startup_duration_seconds once readiness first passes', async () => {
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    const { families } = await scrape();
    const seconds = Number(families.get('istio_agent_startup_duration_seconds')?.metrics[0]?.value);
    assert.ok(seconds > 0 && seconds < 120, `startup took ${seconds} s`);
  });

  describe('an app whose metrics never end', () => {
    let text: string;
    let families: ReturnType<typeof parsePrometheus>;
    before(async () => {
      metricsApp.app.mode = 'endless';
      ({ text, families } = await scrape());
    });

    it('is cut at the 8 MiB cap on a whole line', () => {
      const appPart = text.slice(text.indexOf('app_endless'));
      assert.ok(appPart.length > 0 && appPart.length <= 8 * 1024 * 1024 + 100, `the app's part is ${appPart.length} bytes`);
      assert.ok(appPart.length > 7 * 1024 * 1024, `the app's part is kept up to the cap, not dropped: ${appPart.length} bytes`);
      assert.match(text, /\napp_endless\{line="\d+"\} 1\n# app metrics truncated at the size cap\n$/, 'cut after a whole line, then the note');
      assert.ok(families.has('app_endless'), 'what was kept parses');
    });

    it('is hung up on by the agent, which stops reading near the cap', async () => {
      const closeDeadline = Date.now() + 10_000;
      while (!metricsApp.app.endlessClosed && Date.now() < closeDeadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(metricsApp.app.endlessClosed, 'the agent closed the app\'s endless response');
      const sent = metricsApp.app.endlessBytes;
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(metricsApp.app.endlessBytes, sent, 'nothing more is sent once the agent hung up');
      assert.ok(sent < 64 * 1024 * 1024, `the agent stopped reading near the cap (the app wrote ${sent} bytes)`);
    });

    it('is logged, and counted from the next scrape, which is whole again', async () => {
      assert.equal(scrapeFailures(families, 'application'), '0', 'the truncation counts from the next scrape');
      assert.ok(agent.log.entries.some((entry) => entry.msg === 'app metrics scrape failed' && entry.reason === 'truncated'));
      metricsApp.app.mode = 'ok';
      const again = await scrape();
      assert.equal(again.families.get('app_requests_total')?.metrics[0]?.value, '7', 'the next scrape is whole');
      assert.equal(scrapeFailures(again.families, 'application'), '1');
    });

    it('leaves the agent ready', async () => {
      assert.equal((await get(statusPort, '/healthz/ready')).status, 200, 'the agent stays ready');
    });
  });

  const failures: [string, Mode | 'down', RegExp][] = [
    ['an app answering 500', 'error', /# app metrics unavailable: HTTP 500/],
    ['a slow app (bounded by the 3 s app timeout)', 'slow', /# app metrics unavailable: .*(Timeout|aborted)/i],
    ['a down app', 'down', /# app metrics unavailable: .*ECONNREFUSED/],
  ];
  // The agent's part is collected while the app is scraped, so a scrape shows the failures before it.
  let failedBefore = 1;
  for (const [name, mode, comment] of failures) {
    it(`${name} costs the app's part only, counted and logged`, async () => {
      if (mode === 'down') await metricsApp.close();
      else metricsApp.app.mode = mode;
      const { text, families } = await scrape();
      assert.match(text, comment);
      assert.ok(!families.has('app_requests_total'));
      assert.equal(scrapeFailures(families, 'application'), String(failedBefore));
      failedBefore++;
      assert.ok(agent.log.entries.some((entry) => entry.msg === 'app metrics scrape failed'));
    });
  }
});

describe('several app targets (Istio\'s `targets`) with PILOT_AGENT_MERGE_ENVOY_STATS=false', () => {
  const cleanup = suiteCleanup();
  let statusPort: number;

  before(async () => {
    const upstream = await startUpstream('hello');
    cleanup.defer(() => upstream.close());
    const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
    cleanup.defer(() => peer.stop());
    const first = await startMetricsApp();
    cleanup.defer(() => first.close());
    const second = createServer(
      (request, response) => void (request.url === '/b' ? response.end('# TYPE app_b_up gauge\napp_b_up 1\n# EOF\n') : response.writeHead(404).end()),
    );
    // The second app listens on ::1 only, as an IPv6 pod's app may: Istio's scrape dials localhost, both loopbacks.
    await new Promise<void>((resolve) => second.listen({ port: 0, host: '::1', ipv6Only: true }, resolve));
    cleanup.defer(() => new Promise<void>((resolve) => (second.closeAllConnections(), second.close(() => resolve()))));
    const downPort = await freePort();
    statusPort = await freePort();
    const targets = [
      { port: String(first.port), path: '/custom/metrics' },
      { port: String((second.address() as { port: number }).port), path: '/b' },
      { port: String(downPort), path: '' },
    ];
    const agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
      env: { ISTIO_PROMETHEUS_ANNOTATIONS: JSON.stringify({ scrape: 'true', port: '', path: '', targets }), PILOT_AGENT_MERGE_ENVOY_STATS: 'false' },
    });
    deferStop(cleanup, agent);
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
  });

  it('merges every target in order (one on ::1 only), one failing target costing only its part, and leaves Envoy\'s stats out', async () => {
    const answer = await get(statusPort, '/stats/prometheus');
    assert.equal(answer.status, 200);
    const families = parsePrometheus(answer.body);
    assert.equal(families.get('app_requests_total')?.metrics[0]?.value, '7', 'the first target');
    assert.equal(families.get('app_b_up')?.metrics[0]?.value, '1', 'the second target, on ::1');
    assert.ok(answer.body.indexOf('app_requests_total') < answer.body.indexOf('app_b_up'), 'in the order of the targets');
    assert.doesNotMatch(answer.body, /^# EOF/m, 'an OpenMetrics EOF would end the exposition early');
    assert.match(answer.body, /# app metrics unavailable: .*ECONNREFUSED/, 'the third target is down');
    assert.ok(families.has('istio_agent_epochs_started_total'), 'the agent\'s part');
    assert.deepEqual([...families.keys()].filter((name) => name.startsWith('envoy_')), [], 'no Envoy stats');
    assert.doesNotMatch(answer.body, /Envoy metrics/, 'not even a note: they are left out on purpose');
    const again = parsePrometheus((await get(statusPort, '/metrics')).body);
    assert.equal(scrapeFailures(again, 'application'), '1', 'the down target counted once per scrape');
    assert.equal(scrapeFailures(again, 'envoy'), '0');
  });
});
