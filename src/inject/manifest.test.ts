import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ReplicaSet } from 'kubernetes-models/apps/v1/ReplicaSet';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { CronJob } from 'kubernetes-models/batch/v1/CronJob';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { Pod } from 'kubernetes-models/v1/Pod';
import { AgentError } from '../shared/errors.ts';
import { loadInjectionInputs } from './load.ts';
import { injectManifest } from './manifest.ts';
import type { InjectionInputs, InjectValues, Mapping } from './types.ts';

let inputs: InjectionInputs;
before(async () => {
  inputs = await loadInjectionInputs();
});

const inject = (text: string, values: Partial<InjectValues> = {}) =>
  injectManifest(text, { ...inputs, values: { ...inputs.values, ...values }, source: 'app.yaml' });
const docsOf = (text: string) => parseAllDocuments(text).map((doc) => doc.toJS() as Mapping);

/** Validates against the Kubernetes OpenAPI schema (kubernetes-models' generated validators). */
const models: Record<string, new (data: never) => { validate(): void }> = { Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob };
function validate(doc: Mapping): void {
  const Model = models[String(doc['kind'])];
  assert.ok(Model, `no model for ${String(doc['kind'])}`);
  new Model(doc as never).validate();
}

const podSpec = `
      containers:
        - name: app  # the app
          image: example/app:1
          ports: [{containerPort: 8080}, {containerPort: 9090, protocol: UDP}]`;
const templated = (apiVersion: string, kind: string, spec = '') => `apiVersion: ${apiVersion}
kind: ${kind}
metadata: {name: web, labels: {app: web}}
spec:${spec}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:${podSpec}
`;
const workloads: Record<string, string> = {
  Pod: `apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\nspec:${podSpec.replace(/^ {4}/gm, '')}\n`,
  Deployment: templated('apps/v1', 'Deployment', '\n  replicas: 2'),
  StatefulSet: templated('apps/v1', 'StatefulSet', '\n  serviceName: web'),
  DaemonSet: templated('apps/v1', 'DaemonSet'),
  ReplicaSet: templated('apps/v1', 'ReplicaSet'),
  Job: `apiVersion: batch/v1\nkind: Job\nmetadata: {name: web}\nspec:\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      restartPolicy: Never${podSpec}\n`,
  CronJob: `apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: web}\nspec:\n  schedule: "* * * * *"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never${podSpec.replace(/^ {6}/gm, '          ')}\n`,
};
const podOf = (doc: Mapping): Mapping => {
  const path = { Pod: [], CronJob: ['spec', 'jobTemplate', 'spec', 'template'] }[String(doc['kind'])] ?? ['spec', 'template'];
  return path.reduce<Mapping>((node, key) => node[key] as Mapping, doc);
};
const names = (list: unknown) => (list as Mapping[]).map((item) => item['name']);
const service = `apiVersion: v1\nkind: Service # stays as is\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n`;

describe('injectManifest', () => {
  for (const [kind, text] of Object.entries(workloads)) {
    it(`injects a ${kind} that still passes the Kubernetes schema`, () => {
      const [doc] = docsOf(inject(text));
      assert.ok(doc);
      validate(doc);
      const pod = podOf(doc);
      const spec = pod['spec'] as Mapping;
      assert.deepEqual(names(spec['containers']), ['app', 'istio-proxy']);
      assert.deepEqual(names(spec['initContainers']), ['istio-init']);
      assert.deepEqual(names(spec['volumes']), [
        'workload-socket',
        'credential-socket',
        'workload-certs',
        'istio-envoy',
        'istio-data',
        'istio-podinfo',
        'istio-token',
        'istiod-ca-cert',
        'istio-certs',
      ]);
      assert.match(
        String((pod['metadata'] as Mapping)['annotations'] && ((pod['metadata'] as Mapping)['annotations'] as Mapping)['sidecar.istio.io/status']),
        /"containers":\["istio-proxy"\]/,
      );
    });
  }

  it("gives the proxy Istio's arguments, env (NAMESPACE from POD_NAMESPACE, not CONFIG_NAMESPACE), probes and mounts", () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? '', { discoveryAddress: 'pilot.mesh:15010' }));
    const proxy = (podOf(doc ?? {})['spec'] as Mapping)['containers'] as Mapping[];
    const container = proxy[1] ?? {};
    const args = container['args'] as string[];
    assert.deepEqual(args.slice(0, 7), [
      'proxy',
      'sidecar',
      '--domain',
      '$(POD_NAMESPACE).svc.cluster.local',
      '--proxyLogLevel=warning',
      '--proxyComponentLogLevel=misc:error',
      '--log_output_level=default:info',
    ]);
    assert.equal(args[args.indexOf('--discoveryAddress') + 1], 'pilot.mesh:15010');
    assert.equal(args[args.indexOf('--serviceCluster') + 1], 'web.$(POD_NAMESPACE)');
    const env = container['env'] as Mapping[];
    const value = (name: string) => env.find((e) => e['name'] === name)?.['value'];
    for (const name of ['POD_NAME', 'POD_NAMESPACE', 'INSTANCE_IP', 'SERVICE_ACCOUNT', 'ISTIO_META_NODE_NAME'])
      assert.ok(
        env.some((e) => e['name'] === name && e['valueFrom']),
        name,
      );
    assert.ok(!env.some((e) => String(e['name']).includes('CONFIG_NAMESPACE')), 'istiod reads NAMESPACE, which the agent takes from POD_NAMESPACE');
    assert.deepEqual(JSON.parse(String(value('PROXY_CONFIG'))), { discoveryAddress: 'pilot.mesh:15010', statusPort: 15020, terminationDrainDuration: '5s' });
    assert.equal(value('TERMINATION_DRAIN_DURATION_SECONDS'), '5');
    assert.equal(value('ISTIO_META_POD_PORTS'), '[{"containerPort":8080,"protocol":"TCP"},{"containerPort":9090,"protocol":"UDP"}]');
    assert.equal(value('ISTIO_META_CLUSTER_ID'), 'Kubernetes');
    assert.deepEqual(container['readinessProbe'] && (container['readinessProbe'] as Mapping)['httpGet'], { path: '/healthz/ready', port: 15021 });
    assert.deepEqual(container['startupProbe'] && (container['startupProbe'] as Mapping)['httpGet'], { path: '/healthz/ready', port: 15021 });
    const mounts = Object.fromEntries((container['volumeMounts'] as Mapping[]).map((m) => [m['name'], m['mountPath']]));
    assert.equal(mounts['istio-token'], '/var/run/secrets/tokens');
    assert.equal(mounts['istiod-ca-cert'], '/var/run/secrets/istio');
    assert.equal(mounts['istio-podinfo'], '/etc/istio/pod');
    assert.equal(mounts['workload-socket'], '/var/run/secrets/workload-spiffe-uds');
    assert.equal((container['securityContext'] as Mapping)['runAsUser'], 1337);
    assert.equal(container['lifecycle'], undefined);
  });

  it("captures every inbound port by default (Istio's chart: '*') and runs istio-init with NET_ADMIN and NET_RAW", () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? ''));
    const init = ((podOf(doc ?? {})['spec'] as Mapping)['initContainers'] as Mapping[])[0] ?? {};
    assert.deepEqual(init['args'], [
      'istio-iptables', '-p', '15001', '-z', '15006', '-u', '1337', '-g', '1337', '-m', 'REDIRECT',
      '-i', '*', '-x', '', '-b', '*', '-d', '15090,15021,15020', '--log_output_level=default:info',
    ]);
    assert.deepEqual(((init['securityContext'] as Mapping)['capabilities'] as Mapping)['add'], ['NET_ADMIN', 'NET_RAW']);
  });

  it('with includeInboundPorts empty in the values (Istio 1.1), captures the containerPorts, and warns for a pod that declares none', () => {
    const lines: string[] = [];
    const injectWarned = (text: string) =>
      injectManifest(text, { ...inputs, values: { ...inputs.values, includeInboundPorts: '' }, warn: (line) => lines.push(line), source: 'app.yaml' });
    const argsOf = (text: string) => (((podOf(docsOf(text)[0] ?? {})['spec'] as Mapping)['initContainers'] as Mapping[])[0] ?? {})['args'] as string[];
    const declared = argsOf(injectWarned(workloads['Deployment'] ?? ''));
    assert.equal(declared[declared.indexOf('-b') + 1], '8080,9090');
    assert.deepEqual(lines, []);
    const none = argsOf(injectWarned((workloads['Deployment'] ?? '').replace(/\n\s*ports: \[[^\n]*/, '')));
    assert.equal(none[none.indexOf('-b') + 1], '');
    assert.equal(lines.length, 1);
    assert.match(lines[0] ?? '', /no inbound port is captured .*reaches the app without mTLS/);
  });

  it('an explicit empty includeInboundPorts annotation is honoured, with a warning naming it', () => {
    const lines: string[] = [];
    const text = (workloads['Pod'] ?? '').replace('metadata: {name: web, labels: {app: web}}',
      'metadata: {name: web, annotations: {traffic.sidecar.istio.io/includeInboundPorts: ""}}');
    const out = injectManifest(text, { ...inputs, warn: (line) => lines.push(line), source: 'app.yaml' });
    const args = (((podOf(docsOf(out)[0] ?? {})['spec'] as Mapping)['initContainers'] as Mapping[])[0] ?? {})['args'] as string[];
    assert.equal(args[args.indexOf('-b') + 1], '');
    assert.match(lines[0] ?? '', /includeInboundPorts"\] is empty/);
  });

  it("captures the pod's containerPorts when the values name none (the old default)", () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? '', { includeInboundPorts: '' }));
    const init = ((podOf(doc ?? {})['spec'] as Mapping)['initContainers'] as Mapping[])[0] ?? {};
    assert.deepEqual(init['args'], [
      'istio-iptables', '-p', '15001', '-z', '15006', '-u', '1337', '-g', '1337', '-m', 'REDIRECT',
      '-i', '*', '-x', '', '-b', '8080,9090', '-d', '15090,15021,15020', '--log_output_level=default:info',
    ]);
    assert.deepEqual(((init['securityContext'] as Mapping)['capabilities'] as Mapping)['add'], ['NET_ADMIN', 'NET_RAW']);
  });

  it('gives istio-init the metadata env too, so DNS_CAPTURE turns on the DNS capture with the DNS proxy', () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? '', { proxyMetadata: { DNS_CAPTURE: 'true' } }));
    const spec = podOf(doc ?? {})['spec'] as Mapping;
    const envOf = (container: Mapping | undefined) =>
      Object.fromEntries(((container?.['env'] ?? []) as Mapping[]).map((entry) => [entry['name'], entry['value']]));
    const init = (spec['initContainers'] as Mapping[]).find((c) => c['name'] === 'istio-init');
    const proxy = [...((spec['initContainers'] ?? []) as Mapping[]), ...(spec['containers'] as Mapping[])].find((c) => c['name'] === 'istio-proxy');
    assert.equal(envOf(init)['ISTIO_META_DNS_CAPTURE'], 'true');
    assert.equal(envOf(proxy)['ISTIO_META_DNS_CAPTURE'], 'true');
  });

  it('with holdApplicationUntilProxyStarts on Kubernetes >= 1.29, runs the proxy as a native sidecar after istio-init', () => {
    const text = (workloads['Deployment'] ?? '').replace(
      '      containers:',
      '      initContainers: [{name: migrate, image: example/migrate:1}]\n      containers:',
    );
    const [doc] = docsOf(inject(text, { holdApplicationUntilProxyStarts: true, kubernetesVersion: '1.29' }));
    assert.ok(doc);
    validate(doc);
    const spec = podOf(doc)['spec'] as Mapping;
    assert.deepEqual(names(spec['initContainers']), ['istio-init', 'istio-proxy', 'migrate']);
    assert.deepEqual(names(spec['containers']), ['app']);
    const proxy = (spec['initContainers'] as Mapping[])[1] ?? {};
    assert.equal(proxy['restartPolicy'], 'Always');
    assert.deepEqual(proxy['lifecycle'], { preStop: { exec: { command: ['pilot-agent', 'request', '--debug-port=15020', 'POST', 'drain'] } } });
    assert.ok(proxy['startupProbe'], 'the kubelet starts the next container once the startup probe passes');
    assert.match(
      String(((podOf(doc)['metadata'] as Mapping)['annotations'] as Mapping)['sidecar.istio.io/status']),
      /"initContainers":\["istio-init","istio-proxy"\],"containers":\[\]/,
    );
    assert.equal(
      inject(inject(text, { holdApplicationUntilProxyStarts: true }), { holdApplicationUntilProxyStarts: true }),
      inject(text, { holdApplicationUntilProxyStarts: true }),
    );
  });

  it('with holdApplicationUntilProxyStarts before Kubernetes 1.29, starts the proxy first and holds the app with pilot-agent wait', () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? '', { holdApplicationUntilProxyStarts: true, kubernetesVersion: '1.28' }));
    assert.ok(doc);
    validate(doc);
    const containers = (podOf(doc)['spec'] as Mapping)['containers'] as Mapping[];
    assert.deepEqual(names(containers), ['istio-proxy', 'app']);
    assert.deepEqual(containers[0]?.['lifecycle'], { postStart: { exec: { command: ['pilot-agent', 'wait'] } } });
  });

  it('honours the traffic annotations, with "*" for every inbound port', () => {
    const text = (workloads['Deployment'] ?? '').replace(
      'metadata: {labels: {app: web}}',
      'metadata: {labels: {app: web}, annotations: {traffic.sidecar.istio.io/includeInboundPorts: "*", traffic.sidecar.istio.io/excludeInboundPorts: "22000"}}',
    );
    const [doc] = docsOf(inject(text));
    const args = (((podOf(doc ?? {})['spec'] as Mapping)['initContainers'] as Mapping[])[0]?.['args'] ?? []) as string[];
    assert.equal(args[args.indexOf('-b') + 1], '*');
    assert.equal(args[args.indexOf('-d') + 1], '15090,15021,15020,22000');
  });

  it('passes other kinds through byte for byte, comments included, and keeps the app comments', () => {
    const output = inject(`${service}---\n${workloads['Deployment'] ?? ''}`);
    assert.ok(output.startsWith(service));
    assert.match(output, /- name: app # the app\n/);
  });

  it('is idempotent: injecting its own output changes nothing', () => {
    const once = inject(Object.values(workloads).join('---\n'), { holdApplicationUntilProxyStarts: true });
    assert.equal(inject(once), once);
  });

  it('skips pods that opt out, host-network pods and empty documents', () => {
    const optOut = (workloads['Deployment'] ?? '').replace('metadata: {labels: {app: web}}',
      'metadata: {labels: {app: web}, annotations: {sidecar.istio.io/inject: "false"}}');
    assert.equal(inject(optOut), optOut);
    const hostNetwork = (workloads['Pod'] ?? '').replace('spec:\n', 'spec:\n  hostNetwork: true\n');
    assert.equal(inject(hostNetwork), hostNetwork);
    assert.equal(inject('---\n---\n'), '---\n---\n');
  });
});

describe('injectManifest on bad input', () => {
  const rejects = (text: string, message: RegExp) =>
    assert.throws(() => inject(text), (error: unknown) => {
      assert.ok(error instanceof AgentError, String(error));
      assert.equal(error.exitCode, 2);
      assert.match(error.message, message);
      return true;
    });

  it('names the document that is not YAML', () => {
    rejects(`${service}---\nkind: Pod\nspec: [\n`, /^app\.yaml: document 2: not valid YAML: /);
  });

  it('names a document that is not an object, or has no kind', () => {
    rejects('just a string\n', /^app\.yaml: document 1: not a Kubernetes object/);
    rejects('metadata: {name: x}\n', /^app\.yaml: document 1: kind: missing$/);
  });

  it('refuses an unknown kind that carries a pod template', () => {
    rejects(`kind: Banana\nmetadata: {name: b}\nspec: {template: {spec: {containers: [{name: a}]}}}\n`,
      /^app\.yaml: document 1 \(Banana\/b\): kind: "Banana" has a spec\.template but is not a kind that can be injected/);
    assert.equal(inject('kind: Banana\nspec: {peel: true}\n'), 'kind: Banana\nspec: {peel: true}\n');
  });

  it('names the malformed field of a pod template', () => {
    rejects('kind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: {name: a}}}}\n',
      /^app\.yaml: document 1 \(Deployment\/web\): spec\.template\.spec\.containers: must be a non-empty list$/);
    rejects('kind: Deployment\nmetadata: {name: web}\nspec: {template: 3}\n',
      /^app\.yaml: document 1 \(Deployment\/web\): spec\.template: must be a mapping/);
    rejects('kind: Pod\nmetadata: {name: p, annotations: {a: 1}}\nspec: {containers: [{name: a}]}\n',
      /^app\.yaml: document 1 \(Pod\/p\): metadata\.annotations: must be a mapping of strings$/);
  });

  it('refuses a containerPort out of range', () => {
    rejects((workloads['Pod'] ?? '').replace('9090', '70000'),
      /^app\.yaml: document 1 \(Pod\/web\): spec\.containers\[0\]\.ports\[1\]\.containerPort: port "70000" is not an integer/);
  });

  it('refuses a port both captured and excluded', () => {
    const text = (workloads['Pod'] ?? '').replace('metadata: {name: web, labels: {app: web}}',
      'metadata: {name: web, annotations: {traffic.sidecar.istio.io/includeInboundPorts: "8080,15020"}}');
    rejects(
      text,
      /^app\.yaml: document 1 \(Pod\/web\): excludeInboundPorts: port 15020 is also in the captured inbound ports \(metadata\.annotations\["traffic\.sidecar\.istio\.io\/includeInboundPorts"\]\)$/,
    );
  });

  it('refuses a pod that already has an istio-init of its own', () => {
    rejects((workloads['Pod'] ?? '').replace('spec:\n', 'spec:\n  initContainers: [{name: istio-init, image: x}]\n'),
      /^app\.yaml: document 1 \(Pod\/web\): spec\.initContainers: already has an entry named "istio-init"$/);
  });

  it('names the probe or annotation the agent could not take over', () => {
    const pod = (probe: string, annotations = '{}') =>
      `kind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: ${annotations}}, spec: {containers: [{name: a, ports: [{name: http, containerPort: 80}], ${probe}}]}}}\n`;
    rejects(
      pod('livenessProbe: {httpGet: {path: /, port: web}}'),
      /^app\.yaml: document 1 \(Deployment\/web\): spec\.template\.spec\.containers\[0\]\.livenessProbe\.httpGet\.port: "web" is not the name of one of the container's ports$/,
    );
    rejects(pod('readinessProbe: {tcpSocket: {port: 70000}}'),
      /^app\.yaml: document 1 \(Deployment\/web\): spec\.template\.spec\.containers\[0\]\.readinessProbe\.tcpSocket\.port: must be a port \(1-65535\)$/);
    rejects(pod('startupProbe: {grpc: {port: 9090}, timeoutSeconds: -1}'),
      /^app\.yaml: document 1 \(Deployment\/web\): spec\.template\.spec\.containers\[0\]\.startupProbe\.timeoutSeconds: must be a non-negative integer$/);
    rejects(pod('image: x', '{prometheus.io/port: metrics}'),
      /^app\.yaml: document 1 \(Deployment\/web\): spec\.template\.metadata\.annotations\["prometheus\.io\/port"\]: "metrics" is not a port \(1-65535\)$/);
  });

  it('leaves probes and Prometheus annotations alone when the pod or the values say so', () => {
    const text = `kind: Pod\nmetadata: {name: p, annotations: {sidecar.istio.io/rewriteAppHTTPProbers: "false", prometheus.io/scrape: "false", prometheus.io/port: "9102"}}\nspec: {containers: [{name: a, readinessProbe: {tcpSocket: {port: 80}}}]}\n`;
    const [doc] = docsOf(inject(text));
    const spec = (doc ?? {})['spec'] as Mapping;
    assert.deepEqual(((spec['containers'] as Mapping[])[0] ?? {})['readinessProbe'], { tcpSocket: { port: 80 } });
    assert.equal(((doc?.['metadata'] as Mapping)['annotations'] as Mapping)['prometheus.io/port'], '9102');
    const env = ((spec['containers'] as Mapping[])[1]?.['env'] ?? []) as Mapping[];
    assert.ok(!env.some((e) => e['name'] === 'ISTIO_KUBE_APP_PROBERS' || e['name'] === 'ISTIO_PROMETHEUS_ANNOTATIONS'));
  });
});
