import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { statsTags } from './stats-tags.ts';

const istioTags = [
  'cluster_name', 'http_conn_manager_prefix', 'thread_name', 'tcp_prefix', 'response_code', 'response_code_class',
  'http_conn_manager_listener_prefix', 'listener_address', 'mongo_prefix',
  'cache', 'component', 'tag', 'wasm_filter', 'authz_enforce_result', 'authz_dry_run_action', 'authz_dry_run_result',
];

const names = (tags: { tag_name: string }[]) => tags.map((tag) => tag.tag_name);

describe('the bootstrap\'s stats tags', () => {
  it('are Istio\'s 16, in Istio\'s order', () => {
    assert.deepEqual(names(statsTags({})), istioTags);
  });

  it('cluster_name takes the name istiod ends with `;`, so names with dots stay whole', () => {
    assert.equal(statsTags({}).find((tag) => tag.tag_name === 'cluster_name')!.regex, String.raw`^cluster(\.(.+);)`);
  });

  it('add ProxyConfig extraStatTags and the annotation\'s, once each, before cache', () => {
    const tags = statsTags({ proxyConfig: ['dlp_status', 'source_zone'], annotation: 'dlp_error, dlp_status,' });
    assert.deepEqual(names(tags), [...istioTags.slice(0, 9), 'dlp_status', 'source_zone', 'dlp_error', ...istioTags.slice(9)]);
    assert.equal(tags.find((tag) => tag.tag_name === 'dlp_error')!.regex, String.raw`(dlp_error=\.=(.*?);\.;)`);
  });

  it('refuse an extra tag that is no label name or is one of Istio\'s, naming where it comes from', () => {
    for (const [input, reason] of [
      [{ proxyConfig: ['a.b'] }, /"a\.b" is not a label name/],
      [{ annotation: 'x|y' }, /"x\|y" is not a label name/],
      [{ proxyConfig: ['cluster_name'] }, /one of Istio's own tags/],
    ] as const) {
      assert.throws(
        () => statsTags(input),
        (error: Error & { exitCode: number }) =>
          /^extraStatTags \(ProxyConfig or annotation sidecar\.istio\.io\/extraStatTags\)/.test(error.message) &&
          reason.test(error.message) &&
          error.exitCode === 2,
      );
    }
  });
});
