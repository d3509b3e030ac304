import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { buildNodeMetadata } from '../role/metadata.ts';
import { loadInjectionInputs } from './load.ts';
import { injectManifest } from './manifest.ts';
import type { InjectionInputs, Mapping } from './types.ts';
import { readNodeEnv } from '../settings/pod-env.ts';

const inputPath = new URL('testdata/deployment-probes.yaml', import.meta.url);
const goldenPath = new URL('testdata/deployment-probes.golden.yaml', import.meta.url);

describe('inject: golden output for a Deployment with app probes and Prometheus annotations', () => {
  let inputs: InjectionInputs;
  let output: string;

  before(async () => {
    inputs = await loadInjectionInputs();
    output = injectManifest(await readFile(inputPath, 'utf8'), { ...inputs, source: 'deployment-probes.yaml' });
    // UPDATE_GOLDEN=1 rewrites the golden file; review its diff before committing.
    if (process.env.UPDATE_GOLDEN === '1') await writeFile(goldenPath, output);
  });

  it('matches the golden file', async () => {
    assert.equal(output, await readFile(goldenPath, 'utf8'));
  });

  it('passes the Kubernetes schema', () => {
    new Deployment(parse(output) as never).validate();
  });

  it('is idempotent: injecting the output again changes nothing', () => {
    assert.equal(injectManifest(output, { ...inputs, source: 'again.yaml' }), output);
  });

  it('hands the original probes to the agent as Istio encodes them, and points the kubelet at /app-health', () => {
    const pod = (parse(output) as Mapping & { spec: { template: { metadata: Mapping; spec: { containers: Mapping[] } } } }).spec.template;
    const [app, cache, proxy] = pod.spec.containers;
    const env = Object.fromEntries((proxy?.['env'] as Mapping[]).map((e) => [e['name'], e['value']]));
    assert.deepEqual(JSON.parse(String(env['ISTIO_KUBE_APP_PROBERS'])), {
      '/app-health/reviews/livez': {
        httpGet: { path: '/healthz', port: 9080, scheme: 'HTTPS', httpHeaders: [{ name: 'X-Probe', value: 'live' }] },
        timeoutSeconds: 2,
      },
      '/app-health/reviews/readyz': { tcpSocket: { port: 9080 } },
      '/app-health/reviews/startupz': { grpc: { port: 9090, service: 'reviews.Health' } },
    });
    assert.deepEqual(app?.['livenessProbe'], {
      httpGet: { path: '/app-health/reviews/livez', port: 15020, scheme: 'HTTP', httpHeaders: [{ name: 'X-Probe', value: 'live' }] },
      timeoutSeconds: 2,
      periodSeconds: 10,
    });
    assert.deepEqual(app?.['readinessProbe'], { initialDelaySeconds: 3, httpGet: { path: '/app-health/reviews/readyz', port: 15020 } });
    assert.deepEqual(app?.['startupProbe'], { failureThreshold: 30, httpGet: { path: '/app-health/reviews/startupz', port: 15020 } });
    assert.deepEqual(cache?.['livenessProbe'], { exec: { command: ['cache-cli', 'ping'] } }, 'exec probes stay with the kubelet');
    assert.deepEqual(JSON.parse(String(env['ISTIO_PROMETHEUS_ANNOTATIONS'])), { scrape: 'true', path: '/metrics', port: '9102' });
    const annotations = pod.metadata['annotations'] as Mapping;
    assert.equal(annotations['prometheus.io/port'], '15020');
    assert.equal(annotations['prometheus.io/path'], '/stats/prometheus');
    assert.equal(env['TERMINATION_DRAIN_DURATION_SECONDS'], '5');
  });

  it("gives the agent env it turns into node metadata istiod accepts", () => {
    const pod = (parse(output) as { spec: { template: { spec: { containers: Mapping[] } } } }).spec.template;
    const proxy = pod.spec.containers.find((c) => c['name'] === 'istio-proxy') ?? {};
    const env: Record<string, string> = { POD_NAME: 'reviews-1', POD_NAMESPACE: 'default', SERVICE_ACCOUNT: 'reviews' };
    for (const entry of proxy['env'] as Mapping[]) if (typeof entry['value'] === 'string') env[String(entry['name'])] = entry['value'];
    const agent = { instanceIps: ['198.18.0.5'], envoyStatusPort: 15021, envoyPrometheusPort: 15090, exitOnZeroActiveConnections: false, proxyConfig: {} };
    const metadata = buildNodeMetadata({ node: readNodeEnv(env), podInfo: { labels: { app: 'reviews', version: 'v1' } }, agent });
    assert.equal(metadata.NAMESPACE, 'default');
    assert.equal(metadata.CLUSTER_ID, 'Kubernetes');
    assert.equal(typeof metadata.POD_PORTS, 'string');
    assert.deepEqual(metadata.PROXY_CONFIG, { discoveryAddress: 'istio-pilot.istio-system:15010', statusPort: 15020, terminationDrainDuration: '5s' });
    assert.deepEqual(metadata.LABELS, { app: 'reviews', version: 'v1' });
  });
});
