import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../test/support/ports.ts';
import { parsePrometheus } from '../../test/support/prometheus.ts';
import { mergePrometheus } from './metadata-filter.ts';
import { fetchCapped } from './prometheus.ts';

const agent = '# HELP istio_agent_x An agent counter\n# TYPE istio_agent_x counter\nistio_agent_x 3\n';
const envoy = [
  '# TYPE envoy_cluster_upstream_cx_total counter',
  'envoy_cluster_upstream_cx_total{envoy_cluster_name="a"} 1',
  'envoy_cluster_upstream_cx_total{envoy_cluster_name="b"} 2',
  '# TYPE istio_agent_x counter',
  '# HELP istio_agent_x repeated by Envoy',
  '# TYPE envoy_server_live gauge',
  'envoy_server_live 1',
  '# TYPE envoy_cluster_upstream_cx_total counter',
  '',
].join('\n');

describe('mergePrometheus', () => {
  it('puts the agent first and drops repeated HELP and TYPE lines', () => {
    const merged = mergePrometheus(agent, envoy);
    assert.ok(merged.startsWith(agent));
    assert.equal(merged.match(/^# TYPE istio_agent_x /gm)?.length, 1);
    assert.equal(merged.match(/^# HELP istio_agent_x /gm)?.length, 1);
    assert.equal(merged.match(/^# TYPE envoy_cluster_upstream_cx_total /gm)?.length, 1);
    const families = parsePrometheus(merged);
    assert.equal(families.get('envoy_cluster_upstream_cx_total')?.metrics.length, 2);
    assert.equal(families.get('envoy_server_live')?.type, 'GAUGE');
  });

  const exact: [string, string, string, string][] = [
    ['both empty', '', '', ''],
    ['the agent empty: Envoy whole', '', '# TYPE e gauge\ne 1\n', '# TYPE e gauge\ne 1\n'],
    [
      'a HELP seen keeps the TYPE of that name, and the other way round',
      '# HELP a x\na 1\n',
      '# TYPE a gauge\n# HELP a y\nb 1\n',
      '# HELP a x\na 1\n# TYPE a gauge\nb 1\n',
    ],
    ["Envoy's own repeat goes, its first stays; a free comment stays", '', '# TYPE e gauge\n# Note\n# TYPE e gauge\ne 1', '# TYPE e gauge\n# Note\ne 1\n'],
    ['a repeat as the last line, without a newline', '# TYPE a gauge\n', 'e 1\n# TYPE a gauge', '# TYPE a gauge\ne 1\n'],
    ['a HELP or TYPE only inside a line is no metadata line', '# TYPE a gauge\n', 'e{l="# TYPE a gauge"} 1\n', '# TYPE a gauge\ne{l="# TYPE a gauge"} 1\n'],
    ['a name that only starts like a seen one is kept', '# TYPE a gauge\n', '# TYPE ab gauge\n', '# TYPE a gauge\n# TYPE ab gauge\n'],
  ];
  for (const [name, agentText, envoyText, want] of exact) it(`merges exactly: ${name}`, () => assert.equal(mergePrometheus(agentText, envoyText), want));

  it('ends every part with a newline', () => {
    assert.equal(mergePrometheus('a 1', 'b 2'), 'a 1\nb 2\n');
    assert.equal(mergePrometheus(agent, ''), agent);
  });
});

describe('fetchCapped', () => {
  const lines = Array.from({ length: 1000 }, (_, index) => `metric_${index} ${index}\n`).join('');
  const server = createServer((request, response) => (request.url === '/hang' ? response.write('metric_0 0\n') : response.end(lines)));
  let url = '';

  before(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => {
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    resolve();
  })));
  after(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));

  it('returns the whole body under the cap', async () => {
    const result = await fetchCapped(url, { capBytes: 1 << 20, timeoutMs: 5000 });
    assert.deepEqual(result, { ok: true, status: 200, text: lines, truncated: false });
  });

  it('keeps a body of exactly the cap whole', async () => {
    const result = await fetchCapped(url, { capBytes: lines.length, timeoutMs: 5000 });
    assert.deepEqual(result, { ok: true, status: 200, text: lines, truncated: false });
  });

  it("stops when the caller's signal aborts, with its reason", { timeout: 10_000 }, async () => {
    const caller = new AbortController();
    const pending = fetchCapped(`${url}hang`, { capBytes: 1000, timeoutMs: 60_000, signal: caller.signal });
    await new Promise((resolve) => server.once('request', resolve));
    caller.abort('scrape cancelled');
    assert.deepEqual(await pending, { ok: false, error: 'scrape cancelled' });
  });

  it('takes an https URL over TLS', async () => {
    const result = await fetchCapped(`https://127.0.0.1:${await freePort()}/`, { capBytes: 1000, timeoutMs: 5000 });
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.error : '', /ECONNREFUSED/);
  });

  it('cuts at the last whole line under the cap', async () => {
    const result = await fetchCapped(url, { capBytes: 1000, timeoutMs: 5000 });
    assert.ok(result.ok && result.truncated);
    assert.ok(result.text.length <= 1000 && result.text.endsWith('\n'));
    assert.ok(lines.startsWith(result.text));
    parsePrometheus(result.text);
  });

  it('turns a refused connection into a value', async () => {
    const result = await fetchCapped(`http://127.0.0.1:${await freePort()}/`, { capBytes: 1000, timeoutMs: 5000 });
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.error : '', /ECONNREFUSED/);
  });
});
