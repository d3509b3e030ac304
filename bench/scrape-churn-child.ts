// bench/scrape-churn.ts's child: one build's status server (its src/ given), its Envoy part from the fake admin given.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [srcRoot, envoyPort] = process.argv.slice(2) as [string, string];
const load = (path: string) => import(join(srcRoot, path));
const { startStatusServer } = await load('src/status/server.ts');
const prometheus = await load('src/status/prometheus.ts');
const { Registry } = await load('src/metrics/index.ts');
const { registerRuntimeMetrics } = await load('src/metrics/runtime.ts');
const { silentLogger } = await load('src/shared/log.ts');

const registry = new Registry();
registerRuntimeMetrics(registry, 'istio_agent_');
const url = `http://127.0.0.1:${envoyPort}/stats/prometheus`;
// This checkout streams Envoy's body (openStream); an older one read it whole (fetchCapped).
const envoyMetrics = prometheus.openStream
  ? (signal?: AbortSignal) => prometheus.openStream(url, { timeoutMs: 5000, signal })
  : (signal?: AbortSignal) => prometheus.fetchCapped(url, { capBytes: prometheus.envoyMetricsCapBytes, timeoutMs: 5000, signal });
const deps = {
  readiness: { check: async () => ({ ready: true }) },
  agentMetrics: () => registry.metrics(),
  envoyMetrics,
  epochs: () => ({}),
  quit: () => undefined,
  drain: async () => true,
};
const dir = await mkdtemp(join(tmpdir(), 'scrape-churn-'));
const server = await startStatusServer({ port: 0, readinessSocketPath: join(dir, 'READINESS'), deps, logger: silentLogger });
process.stdout.write(`PORT ${server.port}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
