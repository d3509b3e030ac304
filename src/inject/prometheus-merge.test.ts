import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergePrometheusAnnotations } from './prometheus-merge.ts';

describe('Prometheus annotations merged by the agent', () => {
  const merge = (annotations: Record<string, string>) => mergePrometheusAnnotations(annotations, 15020, 'metadata.annotations');
  const pointed = { 'prometheus.io/port': '15020', 'prometheus.io/path': '/stats/prometheus', 'prometheus.io/scrape': 'true' };

  it("the app's scrape settings move to ISTIO_PROMETHEUS_ANNOTATIONS and the annotations point at the agent", () => {
    assert.deepEqual(merge({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9100', 'prometheus.io/path': '/m', other: 'x' }), {
      annotations: { ...pointed },
      env: '{"scrape":"true","path":"/m","port":"9100"}',
    });
    assert.deepEqual(merge({ 'prometheus_io.port': '65535' }), {
      annotations: { 'prometheus_io.port': null, ...pointed },
      env: '{"scrape":"","path":"","port":"65535"}',
    });
    assert.deepEqual(merge({ app: 'x' }), { annotations: pointed, env: undefined });
    assert.equal(merge({ 'prometheus.io/scrape': 'true' })?.env, '{"scrape":"true","path":"","port":""}');
  });

  it('scrape "false" (or 0, f, FALSE) and a port already at the agent change nothing', () => {
    for (const scrape of ['false', 'FALSE', '0', 'f']) assert.equal(merge({ 'prometheus.io/scrape': scrape }), undefined, scrape);
    assert.notEqual(merge({ 'prometheus.io/scrape': 'falsey' }), undefined);
    assert.notEqual(merge({ 'prometheus.io/scrape': 'no' }), undefined);
    for (const scrape of ['off', '10', 'elf']) assert.notEqual(merge({ 'prometheus.io/scrape': scrape }), undefined, scrape);
    assert.equal(merge({ 'prometheus.io/port': '15020' }), undefined);
  });

  it('a port that is not a port is refused naming the annotation as written', () => {
    const cases: [string, string][] = [
      ['0', 'metadata.annotations["prometheus.io/port"]: "0" is not a port (1-65535)'],
      ['65536', 'metadata.annotations["prometheus.io/port"]: "65536" is not a port (1-65535)'],
      ['http', 'metadata.annotations["prometheus.io/port"]: "http" is not a port (1-65535)'],
      ['80 ', 'metadata.annotations["prometheus.io/port"]: "80 " is not a port (1-65535)'],
      [' 80', 'metadata.annotations["prometheus.io/port"]: " 80" is not a port (1-65535)'],
      ['015020', 'metadata.annotations["prometheus.io/port"]: 015020 is the agent\'s status port'],
    ];
    for (const [port, message] of cases) assert.throws(() => merge({ 'prometheus.io/port': port }), { message }, port);
    assert.throws(() => merge({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': 'http' }),
      { message: 'metadata.annotations["prometheus.io/port"]: "http" is not a port (1-65535)' });
    assert.equal(merge({ 'prometheus.io/port': '1' })?.env, '{"scrape":"","path":"","port":"1"}');
  });
});
