import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { parseAppMetricsTargets, scrapeApp } from './app-metrics.ts';
import type { CappedBody } from './prometheus.ts';

describe('parseAppMetricsTargets', () => {
  const accepted: [string, string | undefined, string | string[] | undefined][] = [
    ["Istio's shape", '{"scrape":"true","port":"9100","path":"/stats"}', 'http://127.0.0.1:9100/stats'],
    ['the default path', '{"scrape":"true","port":"9100"}', 'http://127.0.0.1:9100/metrics'],
    ['an https scheme', '{"scrape":"true","port":"443","path":"/m","scheme":"https"}', 'https://127.0.0.1:443/m'],
    ['scrape "false"', '{"scrape":"false","port":"9100"}', undefined],
    ['what our injector writes for scrape "true" alone (port 80, /metrics)', '{"scrape":"true","path":"","port":""}', 'http://127.0.0.1:80/metrics'],
    ['what our injector writes for a port alone (scrape "")', '{"scrape":"","path":"","port":"9102"}', 'http://127.0.0.1:9102/metrics'],
    ['any scrape but "false", as Istio\'s agent', '{"scrape":"yes","port":"9100"}', 'http://127.0.0.1:9100/metrics'],
    ['unset', undefined, undefined],
    ['blank', '', undefined],
    [
      'several targets (prometheus.istio.io/scrape-targets), in order, path defaulting to /metrics',
      '{"scrape":"true","targets":[{"port":"9100","path":"/a"},{"port":"9200"},{"port":"9300","path":""}]}',
      ['http://127.0.0.1:9100/a', 'http://127.0.0.1:9200/metrics', 'http://127.0.0.1:9300/metrics'],
    ],
    [
      'targets over the legacy port and path',
      '{"scrape":"true","port":"8080","path":"/old","targets":[{"port":"9100","path":"/new"}]}',
      'http://127.0.0.1:9100/new',
    ],
  ];
  for (const [name, value, url] of accepted) {
    const urls = url === undefined ? [] : [url].flat();
    it(`accepts ${name}`, () => assert.deepEqual(parseAppMetricsTargets(value).map((target) => target.url), urls));
  }

  const rejected: [string, string, RegExp][] = [
    ['text that is not JSON', 'port=9100', /not JSON/],
    ['a list', '[]', /JSON object/],
    ['the status port (the scrape would recurse)', '{"port":"15020"}', /port 15020 is the agent's status port/],
    ['Envoy\'s admin port', '{"port":"15000"}', /port 15000 is reserved for Istio \(Envoy admin\)/],
    ['Envoy\'s own Prometheus port', '{"port":"15090"}', /port 15090 is reserved/],
    ['a scrape that is not a string', '{"scrape":true,"port":"1"}', /scrape true is not a string/],
    ['a number port (Istio writes strings)', '{"port":9100}', /port 9100/],
    ['port 70000', '{"port":"70000"}', /port "70000"/],
    ['a path without /', '{"port":"1","path":"metrics"}', /path "metrics"/],
    ['a path with a space', '{"port":"1","path":"/a b"}', /path/],
    ['scheme ftp', '{"port":"1","scheme":"ftp"}', /scheme "ftp"/],
    ['targets that are not a list', '{"targets":{"port":"1"}}', /targets must be a non-empty list/],
    ['a target without a port', '{"targets":[{"path":"/m"}]}', /has no port/],
    ['a target on the status port', '{"targets":[{"port":"9100"},{"port":"15020"}]}', /port 15020 is the agent's status port/],
    ['a target on a reserved port', '{"targets":[{"port":"15090"}]}', /port 15090 is reserved/],
  ];
  for (const [name, value, says] of rejected) {
    it(`rejects ${name}, naming the variable`, () => {
      assert.throws(() => parseAppMetricsTargets(value), (error: unknown) => {
        assert.ok(error instanceof AgentError && error.exitCode === 2);
        assert.match(error.message, /^env ISTIO_PROMETHEUS_ANNOTATIONS: /);
        assert.match(error.message, says);
        return true;
      });
    });
  }
});

describe('scrapeApp', () => {
  const target = { url: 'http://127.0.0.1:1/metrics' };
  const answer = (body: CappedBody) => async () => body;
  const cases: [string, CappedBody, RegExp, boolean][] = [
    ["passes the app's text through", { ok: true, status: 200, text: 'app_x 1\n', truncated: false }, /^app_x 1\n$/, false],
    [
      'turns a down app into a comment',
      { ok: false, error: 'connect ECONNREFUSED\n127.0.0.1:1' },
      /^# app metrics unavailable: connect ECONNREFUSED 127\.0\.0\.1:1\n$/,
      true,
    ],
    ['turns an HTTP error into a comment', { ok: true, status: 500, text: 'oops', truncated: false }, /^# app metrics unavailable: HTTP 500\n$/, true],
    ['drops an OpenMetrics # EOF, as more parts follow', { ok: true, status: 200, text: 'app_x 1\n# EOF\n', truncated: false }, /^app_x 1\n$/, false],
    ['notes a truncated body', { ok: true, status: 200, text: 'app_x 1\n', truncated: true }, /^app_x 1\n# app metrics truncated at the size cap\n$/, true],
  ];
  for (const [name, body, text, failed] of cases) {
    it(name, async () => {
      const part = await scrapeApp(target, answer(body));
      assert.match(part.text, text);
      assert.equal(part.failed !== undefined, failed);
    });
  }
});

describe('scrapeApp on loopback', () => {
  it('asks ::1 when nothing listens on 127.0.0.1, as Istio\'s dial of localhost reaches an app on ::1 only', async () => {
    const asked: string[] = [];
    const fetch = async (url: string): Promise<CappedBody> => {
      asked.push(url);
      return url.includes('[::1]') ? { ok: true, status: 200, text: 'app_v6 1\n', truncated: false } : { ok: false, error: 'Error: connect ECONNREFUSED 127.0.0.1:9' };
    };
    const part = await scrapeApp({ url: 'http://127.0.0.1:9/metrics' }, fetch);
    assert.equal(part.text, 'app_v6 1\n');
    assert.deepEqual(asked, ['http://127.0.0.1:9/metrics', 'http://[::1]:9/metrics']);
  });

  it('does not ask again after a timeout or an answer', async () => {
    const asked: string[] = [];
    const fetch = async (url: string): Promise<CappedBody> => (asked.push(url), { ok: false, error: 'TimeoutError: timed out' });
    await scrapeApp({ url: 'http://127.0.0.1:9/metrics' }, fetch);
    assert.deepEqual(asked, ['http://127.0.0.1:9/metrics']);
  });
});
