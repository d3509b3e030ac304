import assert from 'node:assert/strict';
import { test } from 'node:test';
import { statsMatcher, type StatsMatcherInput } from './stats-matcher.ts';

const base: StatsMatcherInput = { flags: {}, annotations: {}, exitOnZeroActiveConnections: false, instanceIps: ['10.0.0.7'] };
const kinds = (input: StatsMatcherInput) => statsMatcher(input).inclusion_list.patterns.map((pattern) => JSON.stringify(pattern));

test('statsMatcher: Istio\'s default inclusion list', () => {
  assert.deepEqual(kinds(base), [
    '{"prefix":"reporter="}',
    '{"prefix":"cluster_manager"}', '{"prefix":"listener_manager"}', '{"prefix":"server"}', '{"prefix":"cluster.xds-grpc"}', '{"prefix":"wasm"}',
    '{"suffix":"rbac.allowed"}', '{"suffix":"rbac.denied"}', '{"suffix":"shadow_allowed"}', '{"suffix":"shadow_denied"}',
    '{"safe_regex":{"regex":"vhost\\\\..*\\\\.route\\\\..*"}}',
    '{"prefix":"component"}', '{"prefix":"istio"}',
  ]);
});

test('statsMatcher: draining on zero connections keeps downstream_cx_active', () => {
  assert.ok(kinds({ ...base, exitOnZeroActiveConnections: true }).includes('{"suffix":"downstream_cx_active"}'));
  assert.ok(!kinds(base).includes('{"suffix":"downstream_cx_active"}'));
});

test('statsMatcher: flags win over annotations, annotations over ProxyConfig; required entries stay', () => {
  const annotations = { 'sidecar.istio.io/statsInclusionPrefixes': 'upstream_cx,http.{pod_ip}_' };
  const proxyConfig = { prefixes: ['from-proxy-config'] };
  const table: Array<[Partial<StatsMatcherInput>, string[], string[]]> = [
    [{ proxyConfig }, ['from-proxy-config'], []],
    [{ proxyConfig, annotations }, ['upstream_cx', 'http.10.0.0.7_'], ['from-proxy-config']],
    [{ proxyConfig, annotations, flags: { prefixes: ['cluster.outbound'] } }, ['cluster.outbound'], ['upstream_cx', 'from-proxy-config']],
  ];
  for (const [input, present, absent] of table) {
    const patterns = kinds({ ...base, ...input });
    for (const prefix of present) assert.ok(patterns.includes(JSON.stringify({ prefix })), prefix);
    for (const prefix of absent) assert.ok(!patterns.includes(JSON.stringify({ prefix })), prefix);
    assert.ok(patterns.includes('{"prefix":"server"}'), 'required prefixes stay');
  }
  const suffixes = kinds({ ...base, annotations: { 'sidecar.istio.io/statsInclusionSuffixes': 'upstream_rq_total' }, flags: { regexps: ['^cluster\\.a'] } });
  assert.ok(suffixes.includes('{"suffix":"upstream_rq_total"}') && suffixes.includes('{"safe_regex":{"regex":"^cluster\\\\.a"}}'));
});
