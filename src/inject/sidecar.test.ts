import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { loadInjectionInputs } from './load.ts';
import { buildPodPatch, decideInjection } from './sidecar.ts';
import { parseTemplate } from './template.ts';
import type { InjectionInputs, InjectValues, Mapping } from './types.ts';

let inputs: InjectionInputs;
before(async () => {
  inputs = await loadInjectionInputs();
});

const app = { name: 'app', image: 'example/app:1', ports: [{ containerPort: 8080 }], readinessProbe: { tcpSocket: { port: 8080 } } };
const podOf = (annotations: Mapping = {}, spec: Mapping = {}) => ({ path: [], metadata: { name: 'web', annotations }, spec: { containers: [app], ...spec } });

describe('decideInjection', () => {
  const cases: [string, Mapping, Mapping, Mapping, string][] = [
    ['an ordinary pod', {}, {}, {}, 'inject'],
    ['a pod with the status annotation only', { 'sidecar.istio.io/status': '{}' }, {}, {}, 'injected-already'],
    ['a pod with an istio-proxy container after its app', {}, { containers: [app, { name: 'istio-proxy' }] }, {}, 'injected-already'],
    ['a pod with a native istio-proxy', {}, { initContainers: [{ name: 'istio-proxy' }] }, {}, 'injected-already'],
    ['a host-network pod', {}, { hostNetwork: true }, {}, 'host-network'],
    ['a pod whose workload says inject "false"', {}, {}, { annotations: { 'sidecar.istio.io/inject': 'false' } }, 'disabled'],
    ['a pod that says "true" over a workload that says "false"', { 'sidecar.istio.io/inject': 'true' }, {},
      { annotations: { 'sidecar.istio.io/inject': 'false' } }, 'inject'],
  ];
  for (const word of ['false', 'FALSE', 'no', 'n', 'off', '0', 'f']) cases.push([`inject "${word}"`, { 'sidecar.istio.io/inject': word }, {}, {}, 'disabled']);
  for (const word of ['true', 'yes', 'nope']) cases.push([`inject "${word}"`, { 'sidecar.istio.io/inject': word }, {}, {}, 'inject']);
  for (const [name, annotations, spec, workload, decision] of cases) {
    it(`${name}: ${decision}`, () => assert.equal(decideInjection(podOf(annotations, spec), workload), decision));
  }
});

describe('buildPodPatch', () => {
  const patch = (annotations: Mapping, values: Partial<InjectValues> = {}, template = inputs.template) =>
    buildPodPatch(podOf({ 'prometheus.io/port': '9100', ...annotations }), { ...inputs, template, values: { ...inputs.values, ...values } }, 'web');
  const proxyEnv = (result: ReturnType<typeof patch>) => {
    const proxy = result.lists.flatMap((list) => list.items).find((item) => item['name'] === 'istio-proxy');
    return ((proxy?.['env'] ?? []) as Mapping[]).map((entry) => entry['name']);
  };

  it('merges the metrics unless the values or the pod turn it off', () => {
    assert.equal(patch({})['annotations']['prometheus.io/port'], '15020');
    assert.ok(proxyEnv(patch({})).includes('ISTIO_PROMETHEUS_ANNOTATIONS'));
    for (const [annotations, values] of [[{ 'prometheus.istio.io/merge-metrics': 'false' }, {}], [{}, { prometheusMerge: false }]] as const) {
      const result = patch(annotations, values);
      assert.deepEqual(Object.keys(result.annotations), ['sidecar.istio.io/status'], JSON.stringify([annotations, values]));
      assert.ok(!proxyEnv(result).includes('ISTIO_PROMETHEUS_ANNOTATIONS'));
    }
  });

  it('rewrites the probes unless the values or the pod turn it off', () => {
    assert.deepEqual(patch({}).probeRewrites.map((rewrite) => rewrite.index), [0]);
    assert.deepEqual(patch({ 'sidecar.istio.io/rewriteAppHTTPProbers': 'off' }).probeRewrites, []);
    assert.deepEqual(patch({}, { rewriteAppHTTPProbers: false }).probeRewrites, []);
  });

  it('gives istio-init --native-nftables when the values ask for it, as Istio\'s global.nativeNftables, and not otherwise', () => {
    const initArgs = (values: Partial<InjectValues>) =>
      patch({}, values).lists.flatMap((list) => list.items).find((item) => item['name'] === 'istio-init')?.['args'] as string[];
    assert.equal(initArgs({}).includes('--native-nftables'), false);
    assert.equal(initArgs({ nativeNftables: true }).at(-1), '--native-nftables');
    assert.equal(initArgs({ nativeNftables: true }).filter((arg) => arg === '--native-nftables').length, 1);
  });

  it("adds the metadata env to the template's istio-proxy and istio-init only, and nothing when there is none", () => {
    const template = parseTemplate(
      'initContainers: [{name: istio-init}, {name: other-init}]\ncontainers: [{name: istio-proxy}, {name: helper}]\nvolumes: [{name: v}]\n',
      'custom.yaml',
    );
    const items = (values: Partial<InjectValues>) =>
      Object.fromEntries(patch({ 'prometheus.istio.io/merge-metrics': 'false' }, { rewriteAppHTTPProbers: false, ...values }, template)
        .lists.flatMap((list) => list.items).map((item) => [item['name'], item['env']]));
    assert.deepEqual(items({}), { 'istio-init': undefined, 'other-init': undefined, 'istio-proxy': undefined, helper: undefined, v: undefined });
    const env = [{ name: 'ISTIO_META_DNS_CAPTURE', value: 'true' }];
    assert.deepEqual(items({ proxyMetadata: { DNS_CAPTURE: 'true' } }), { 'istio-init': env, 'other-init': undefined, 'istio-proxy': env, helper: undefined, v: undefined });
  });
});
