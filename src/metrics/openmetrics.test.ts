import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toOpenMetrics } from './openmetrics.ts';

const cases: { name: string; text: string; want: string }[] = [
  {
    name: 'a counter named with _total: the family loses it, the sample keeps it',
    text:
      '# HELP istio_agent_dns_requests_total Total number of DNS requests.\n' +
      '# TYPE istio_agent_dns_requests_total counter\nistio_agent_dns_requests_total 3\n',
    want: '# HELP istio_agent_dns_requests Total number of DNS requests.\n# TYPE istio_agent_dns_requests counter\nistio_agent_dns_requests_total 3\n# EOF\n',
  },
  {
    name: "a counter named without _total (Envoy's, Istio's wasm_*_count): its samples gain it, labels kept",
    text: '# TYPE envoy_cluster_upstream_rq counter\nenvoy_cluster_upstream_rq{code="200"} 7\n',
    want: '# TYPE envoy_cluster_upstream_rq counter\nenvoy_cluster_upstream_rq_total{code="200"} 7\n# EOF\n',
  },
  {
    name: 'gauges and histograms pass unchanged; untyped is unknown; blank lines and free comments go',
    text: '# TYPE g gauge\ng 1\n\n# Envoy metrics unavailable: x\n# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 0.5\nh_count 1\n\n# TYPE u untyped\nu 2\n',
    want: '# TYPE g gauge\ng 1\n# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 0.5\nh_count 1\n# TYPE u unknown\nu 2\n# EOF\n',
  },
  {
    name: "an app's own # EOF in the middle is dropped: one ends the whole",
    text: '# TYPE a gauge\na 1\n# EOF\n# TYPE b gauge\nb 2\n',
    want: '# TYPE a gauge\na 1\n# TYPE b gauge\nb 2\n# EOF\n',
  },
  { name: 'nothing at all is still a valid exposition', text: '', want: '# EOF\n' },
  { name: 'a sample with no TYPE is kept as it is (unknown)', text: 'x_total 1\n', want: 'x_total 1\n# EOF\n' },
  {
    name: "a counter's HELP is renamed as its TYPE, and HELP with no text stays empty",
    text: '# HELP c_total\n# HELP d Things.\n# TYPE c_total counter\n# TYPE d counter\nc_total 1\nd 2\n',
    want: '# HELP c\n# HELP d Things.\n# TYPE c counter\n# TYPE d counter\nc_total 1\nd_total 2\n# EOF\n',
  },
  {
    name: 'the first TYPE of a name decides its samples (a later counter TYPE from another part renames none)',
    text: '# TYPE m gauge\nm 1\n# TYPE m counter\nm 2\n',
    want: '# TYPE m gauge\nm 1\n# TYPE m counter\nm 2\n# EOF\n',
  },
  {
    name: "a counter's sample is matched by its whole name: before labels, a space or nothing, never a prefix",
    text: '# TYPE r counter\nr{a="1"} 1\nr 2\nr\nrx 3\nr_total 4\n',
    want: '# TYPE r counter\nr_total{a="1"} 1\nr_total 2\nr_total\nrx 3\nr_total 4\n# EOF\n',
  },
  { name: 'lines of spaces go; a TYPE with no name is a free comment', text: '   \n\t\n# TYPE\n# TYPE  counter\n', want: '# EOF\n' },
  {
    name: 'a counter with _total inside its name keeps it',
    text: '# TYPE a_total_b counter\na_total_b 1\n',
    want: '# TYPE a_total_b counter\na_total_b_total 1\n# EOF\n',
  },
];

for (const { name, text, want } of cases) test(`toOpenMetrics: ${name}`, () => assert.equal(toOpenMetrics(text), want));

test('toOpenMetrics is linear: 200,000 counter lines convert at once', () => {
  const lines = Array.from({ length: 200_000 }, (_, i) => `# TYPE c${i} counter\nc${i} ${i}`).join('\n');
  const out = toOpenMetrics(lines);
  assert.ok(out.includes('\nc199999_total 199999\n# EOF\n'));
});
