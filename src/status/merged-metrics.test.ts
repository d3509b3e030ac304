import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePrometheus } from '../../test/support/prometheus.ts';
import { mergedMetrics, type MergedParts } from './merged-metrics.ts';

const agent = '# TYPE istio_agent_up gauge\nistio_agent_up 1\n';

async function page(parts: Partial<MergedParts>): Promise<{ text: string; failures: number }> {
  let failures = 0;
  const chunks: string[] = [];
  for await (const chunk of mergedMetrics({ agent, envoyCapBytes: 1 << 20, envoyFailed: () => failures++, ...parts })) chunks.push(String(chunk));
  return { text: chunks.join(''), failures };
}

/** Envoy's body as a stream that yields `lines`, then fails with `error` when given; `closed` once its reader let go. */
function envoyBody(lines: string[], error?: Error) {
  const state = { pulled: 0, closed: false };
  async function* body() {
    try {
      for (const line of lines) {
        state.pulled++;
        yield Buffer.from(line);
      }
      if (error) throw error;
    } finally {
      state.closed = true;
    }
  }
  return { state, envoy: { ok: true as const, status: 200, body: body() } };
}

describe('mergedMetrics: the page as the client reads it', () => {
  it('the agent, then Envoy as it came (a last line given its newline), then the app, each family declared once', async () => {
    const { envoy } = envoyBody(['# TYPE envoy_a counter\nenvoy_a 1\n# TYPE istio_agent_up gauge\n', 'envoy_b', ' 2']);
    const { text, failures } = await page({ envoy, app: Promise.resolve('# TYPE envoy_a counter\napp_x 3') });
    assert.equal(text, `${agent}# TYPE envoy_a counter\nenvoy_a 1\nenvoy_b 2\napp_x 3\n`);
    assert.equal(failures, 0);
    parsePrometheus(text);
  });

  it('Envoy down or not 200: a comment, one failure counted, the app still there', async () => {
    for (const envoy of [{ ok: false as const, error: 'ECONNREFUSED\nat …' }, { ok: true as const, status: 503, body: [] }]) {
      const { text, failures } = await page({ envoy, app: Promise.resolve('app_x 3\n') });
      assert.match(text, /^# Envoy metrics unavailable: (ECONNREFUSED at …|HTTP 503)\napp_x 3\n$/m);
      assert.equal(failures, 1);
    }
  });

  it('Envoy failing mid-body: its whole lines kept, the cut one dropped, a comment, one failure', async () => {
    const { envoy, state } = envoyBody(['envoy_a 1\nenvoy_b 2'], new Error('socket hang up'));
    const { text, failures } = await page({ envoy });
    assert.equal(text, `${agent}envoy_a 1\n# Envoy metrics unavailable: Error: socket hang up\n`);
    assert.equal(failures, 1);
    assert.ok(state.closed);
  });

  it('cuts Envoy at the cap, at a line end, stops reading it and says so', async () => {
    const { envoy, state } = envoyBody(Array.from({ length: 100 }, (_, index) => `envoy_line_${String(index).padStart(3, '0')} 1\n`));
    const { text, failures } = await page({ envoy, envoyCapBytes: 50 });
    assert.equal(text, `${agent}envoy_line_000 1\nenvoy_line_001 1\n# Envoy metrics truncated at the size cap\n`);
    assert.equal(failures, 0);
    assert.ok(state.closed && state.pulled < 10, `stopped reading Envoy (${state.pulled} chunks pulled)`);
  });

  it('the client gone mid-body: no failure counted, the error goes up (the stream is torn down)', async () => {
    const gone = new AbortController();
    gone.abort();
    const { envoy } = envoyBody(['envoy_a 1\n'], new Error('aborted'));
    await assert.rejects(page({ envoy, signal: gone.signal }), /aborted/);
  });

  it('reads Envoy only as fast as the page is read', async () => {
    const { envoy, state } = envoyBody(Array.from({ length: 100 }, () => 'envoy_a 1\n'));
    const iterator = mergedMetrics({ agent, envoy, envoyCapBytes: 1 << 20, envoyFailed: () => undefined });
    for (let read = 0; read < 4; read++) await iterator.next();
    assert.equal(state.pulled, 3, 'the agent\'s part, then one chunk of Envoy per read');
    await iterator.return(undefined);
    assert.ok(state.closed, 'a page dropped early lets go of Envoy\'s body');
  });
});
