/**
 * Istio's mTLS metrics ports (ENVOY_SECURE_METRICS_PORT and
 * ENVOY_SECURE_MERGED_METRICS_PORT): a scraper with a certificate from the
 * mesh's root gets Envoy's stats, or the merged metrics, over TLS; one
 * without a certificate gets no connection; no other path passes.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { describe, it } from 'node:test';
import { startCaRig } from '../support/ca-rig.ts';
import { issueServerPair } from '../support/csr-signer.ts';
import { freePort } from '../support/ports.ts';
import { waitForStatus } from '../support/status-agent.ts';

interface Scrape {
  status: number;
  body: string;
  error?: string;
}

/** One GET over TLS; the server's certificate (a SPIFFE identity) is not what this test checks. */
function scrape(port: number, path: string, client?: { cert: Buffer; key: Buffer }): Promise<Scrape> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, rejectUnauthorized: false, ...client, timeout: 5000, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    req.on('error', (error) => resolve({ status: 0, body: '', error: error.message }));
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

describe("Istio's mTLS metrics ports", () => {
  it('serve Envoy\'s stats and the merged metrics to a client certificate from the mesh\'s root, and nothing without one', { timeout: 120_000 }, async () => {
    const [envoyPort, mergedPort] = [await freePort(), await freePort()];
    await using rig = await startCaRig({ env: { ENVOY_SECURE_METRICS_PORT: String(envoyPort), ENVOY_SECURE_MERGED_METRICS_PORT: String(mergedPort) } });
    await waitForStatus(rig.statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    const pair = await issueServerPair(rig.signer, 'prometheus.example');
    const client = { cert: await readFile(pair.cert), key: await readFile(pair.key) };

    const envoyStats = await scrape(envoyPort, '/stats/prometheus', client);
    assert.equal(envoyStats.status, 200, JSON.stringify(envoyStats));
    assert.match(envoyStats.body, /^envoy_server_live/m);
    assert.doesNotMatch(envoyStats.body, /istio_agent_/, "Envoy's own stats only");
    for (const path of ['/stats/prometheus', '/metrics']) {
      const merged = await scrape(mergedPort, path, client);
      assert.equal(merged.status, 200, `${path}: ${JSON.stringify(merged).slice(0, 300)}`);
      assert.match(merged.body, /^istio_agent_/m, `${path} is the merged answer`);
    }
    for (const [port, path] of [[envoyPort, '/config_dump'], [envoyPort, '/stats/prometheus/../../config_dump'], [mergedPort, '/quitquitquit']] as const)
      assert.equal((await scrape(port, path, client)).status, 404, `${port}${path}`);
    for (const port of [envoyPort, mergedPort]) {
      const anonymous = await scrape(port, '/stats/prometheus');
      assert.equal(anonymous.status, 0, `no client certificate, no answer on ${port}: ${JSON.stringify(anonymous).slice(0, 200)}`);
    }
  });
});
