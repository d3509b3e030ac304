import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { loadInjectionInputs } from './load.ts';
import type { InjectValues, Mapping } from './types.ts';
import { podVars } from './vars.ts';

let defaults: InjectValues;
before(async () => {
  defaults = (await loadInjectionInputs()).values;
});

const app = (ports?: unknown): Mapping => ({ name: 'app', image: 'example/app:1', ...(ports === undefined ? {} : { ports }) });
const podOf = (metadata: Mapping, spec: Mapping = { containers: [app([{ containerPort: 8080 }])] }) => ({ path: ['spec', 'template'], metadata, spec });
const varsOf = (metadata: Mapping, spec?: Mapping, values: Partial<InjectValues> = {}, workload = 'web', warn?: (line: string) => void) =>
  podVars(podOf(metadata, spec), { ...defaults, ...values }, workload, warn);
const annotated = (name: string, value: string): Mapping => ({ annotations: { [`traffic.sidecar.istio.io/${name}`]: value } });
const field = (name: string) => `spec.template.metadata.annotations["traffic.sidecar.istio.io/${name}"]`;

/** The usage error (exit 2) podVars throws. */
function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof AgentError && error.exitCode === 2, String(error));
    return error.message;
  }
  assert.fail('no error');
}

describe('podVars: what the pod decides', () => {
  const clusters: [string, Mapping, string, string][] = [
    ['the app label', { labels: { app: 'shop', 'app.kubernetes.io/name': 'store' } }, 'web', 'shop.$(POD_NAMESPACE)'],
    ['app.kubernetes.io/name without app', { labels: { 'app.kubernetes.io/name': 'store' } }, 'web', 'store.$(POD_NAMESPACE)'],
    ['the workload name without labels', {}, 'web', 'web.$(POD_NAMESPACE)'],
    ['istio-proxy when nothing names the app', {}, '', 'istio-proxy'],
  ];
  for (const [name, metadata, workload, cluster] of clusters) {
    it(`names the service cluster from ${name}`, () => assert.equal(varsOf(metadata, undefined, {}, workload)['serviceCluster'], cluster));
  }

  it("passes the pod's labels and service account, 'default' without one", () => {
    const vars = varsOf({ labels: { app: 'shop', tier: 'web' } });
    assert.deepEqual(JSON.parse(String(vars['podLabelsJson'])), { app: 'shop', tier: 'web' });
    assert.equal(vars['serviceAccountName'], 'default');
    assert.equal(varsOf({}, { serviceAccountName: 'shop', containers: [app()] })['serviceAccountName'], 'shop');
  });

  it('puts holdApplicationUntilProxyStarts in PROXY_CONFIG only when on', () => {
    assert.deepEqual(JSON.parse(String(varsOf({}, undefined, { holdApplicationUntilProxyStarts: true })['proxyConfigJson'])), {
      discoveryAddress: defaults.discoveryAddress,
      statusPort: 15020,
      terminationDrainDuration: '5s',
      holdApplicationUntilProxyStarts: true,
    });
    assert.equal(JSON.parse(String(varsOf({})['proxyConfigJson']))['holdApplicationUntilProxyStarts'], undefined);
  });

  it('names a port in ISTIO_META_POD_PORTS only by a string name', () => {
    const spec = { containers: [app([{ name: 'http', containerPort: 8080 }, { name: 8081, containerPort: 8081, protocol: 'UDP' }]), app()] };
    assert.equal(varsOf({}, spec)['podPortsJson'], '[{"name":"http","containerPort":8080,"protocol":"TCP"},{"containerPort":8081,"protocol":"UDP"}]');
  });
});

describe('podVars: the inbound capture', () => {
  const declared = { containers: [app([{ containerPort: 8080 }, { containerPort: 15020 }])] };

  it("with the values' list empty or blank, captures the declared ports but the excluded ones, without complaint", () => {
    for (const includeInboundPorts of ['', '  ']) {
      assert.equal(varsOf({}, declared, { includeInboundPorts })['includeInboundPorts'], '8080', JSON.stringify(includeInboundPorts));
    }
  });

  it("refuses a port the values' list captures and excludes, naming the list", () => {
    assert.equal(usageError(() => varsOf({}, declared, { includeInboundPorts: '8080,15020' })),
      'excludeInboundPorts: port 15020 is also in the captured inbound ports (values.includeInboundPorts)');
  });

  it('names the bad list in the values or annotations', () => {
    assert.match(usageError(() => varsOf({}, declared, { includeInboundPorts: '80,x' })), /^values\.includeInboundPorts: port "x"/);
    assert.match(usageError(() => varsOf({}, declared, { excludeInboundPorts: 'x' })), /^values\.excludeInboundPorts: port "x"/);
    assert.equal(usageError(() => varsOf({}, { containers: [app(8080)] })), 'spec.template.spec.containers[0].ports: must be a list');
    for (const name of ['includeOutboundIPRanges', 'excludeOutboundIPRanges'] as const) {
      assert.ok(usageError(() => varsOf({}, declared, { [name]: 'nope' })).startsWith(`values.${name}: `), name);
      assert.ok(usageError(() => varsOf(annotated(name, 'nope'), declared)).startsWith(`${field(name)}: `), name);
    }
  });

  it('takes the outbound ranges from the annotation over the values', () => {
    const vars = varsOf(annotated('excludeOutboundIPRanges', '10.0.0.0/8'), declared, { excludeOutboundIPRanges: '192.168.0.0/16' });
    assert.equal(vars['excludeOutboundIPRanges'], '10.0.0.0/8');
    assert.equal(varsOf({}, declared, { excludeOutboundIPRanges: '192.168.0.0/16' })['excludeOutboundIPRanges'], '192.168.0.0/16');
  });

  it('warns, naming why, when no inbound port is captured', () => {
    const lines: string[] = [];
    varsOf(annotated('includeInboundPorts', ''), declared, {}, 'web', (line) => lines.push(line));
    varsOf({}, { containers: [app()] }, { includeInboundPorts: '' }, 'web', (line) => lines.push(line));
    varsOf({}, declared, {}, 'web', (line) => lines.push(line));
    const tail = 'traffic from the pod network reaches the app without mTLS or authorization';
    assert.deepEqual(lines, [
      `spec.template.metadata: no inbound port is captured (${field('includeInboundPorts')} is empty): ${tail}`,
      'spec.template.metadata: no inbound port is captured (values.includeInboundPorts is empty and no container declares a port '
        + `(spec.template.spec.containers)): ${tail}`,
    ]);
  });
});
