import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePrometheus } from '../../test/support/prometheus.ts';
import type { StatusDeps } from './handler.ts';
import { answered } from '../../test/support/status-answer.ts';

const baseDeps: StatusDeps = {
  readiness: { check: async () => ({ ready: true }) },
  agentMetrics: async () => '# TYPE istio_agent_up gauge\nistio_agent_up 1\n',
  envoyMetrics: async () => ({ ok: true, status: 200, body: [Buffer.from('# TYPE envoy_server_live gauge\nenvoy_server_live 1\n')] }),
  epochs: () => ({}),
  quit: () => undefined,
  drain: async () => true,
};
const get = (deps: StatusDeps, url: string, method = 'GET') => answered(deps, { method, url, remoteAddress: '10.0.0.9' });

describe('status routes for the app', () => {
  it('passes /app-health paths, without query, to the probes and answers their verdict', async () => {
    const asked: string[] = [];
    const deps = { ...baseDeps, appHealth: async (path: string) => (asked.push(path), { status: 503, reason: 'app answered 503' }) };
    const answer = await get(deps, '/app-health/web/readyz?target=http://evil');
    assert.deepEqual([answer.status, answer.body, asked], [503, 'app answered 503\n', ['/app-health/web/readyz']]);
    assert.equal((await get(deps, '/app-health/web/readyz', 'POST')).status, 405);
  });

  it('answers 404 for /app-health when no probes are configured', async () => {
    assert.equal((await get(baseDeps, '/app-health/web/readyz')).status, 404);
  });

  it('appends the app\'s part after Envoy\'s, dropping repeated metadata, also when Envoy is down', async () => {
    const appMetrics = async () => '# TYPE envoy_server_live gauge\n# TYPE app_x counter\napp_x 2\n';
    for (const envoyMetrics of [baseDeps.envoyMetrics, async () => ({ ok: false as const, error: 'ECONNREFUSED' })]) {
      const answer = await get({ ...baseDeps, envoyMetrics, appMetrics }, '/stats/prometheus');
      assert.ok(answer.body.endsWith('# TYPE app_x counter\napp_x 2\n'), answer.body);
      assert.equal(parsePrometheus(answer.body).get('app_x')?.metrics[0]?.value, '2');
    }
  });
});
