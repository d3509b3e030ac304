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
      assert.deepEqual(names(spec['volumes']), ['istio-envoy', 'istio-certs']);
      assert.match(String((pod['metadata'] as Mapping)['annotations'] && ((pod['metadata'] as Mapping)['annotations'] as Mapping)['sidecar.istio.io/status']), /"containers":\["istio-proxy"\]/);
    });
  }

  it('gives the proxy the agent flags, downward-API env, readiness probe and mounts', () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? '', { discoveryAddress: 'pilot.mesh:15010' }));
    const proxy = (podOf(doc ?? {})['spec'] as Mapping)['containers'] as Mapping[];
    const container = proxy[1] ?? {};
    const args = container['args'] as string[];
    assert.deepEqual(args.slice(0, 4), ['proxy', 'sidecar', '--configPath', '/etc/istio/proxy']);
    assert.equal(args[args.indexOf('--discoveryAddress') + 1], 'pilot.mesh:15010');
    assert.equal(args[args.indexOf('--serviceCluster') + 1], 'web.$(POD_NAMESPACE)');
    const env = container['env'] as Mapping[];
    for (const name of ['POD_NAME', 'POD_NAMESPACE', 'INSTANCE_IP']) assert.ok(env.some((e) => e['name'] === name && e['valueFrom']), name);
    assert.deepEqual(env.find((e) => e['name'] === 'TERMINATION_DRAIN_DURATION_SECONDS'), { name: 'TERMINATION_DRAIN_DURATION_SECONDS', value: '5' }, "Istio's 5 s, under Kubernetes' 30 s grace");
    assert.deepEqual(container['readinessProbe'] && (container['readinessProbe'] as Mapping)['httpGet'], { path: '/healthz/ready', port: 15021 });
    assert.deepEqual(container['volumeMounts'], [
      { name: 'istio-envoy', mountPath: '/etc/istio/proxy' },
      { name: 'istio-certs', mountPath: '/etc/certs', readOnly: true },
    ]);
    assert.equal((container['securityContext'] as Mapping)['runAsUser'], 1337);
    assert.equal(container['lifecycle'], undefined);
  });

  it("captures the pod's containerPorts and runs istio-init with NET_ADMIN and NET_RAW", () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? ''));
    const init = ((podOf(doc ?? {})['spec'] as Mapping)['initContainers'] as Mapping[])[0] ?? {};
    assert.deepEqual(init['args'], [
      'istio-iptables', '-p', '15001', '-z', '15006', '-u', '1337', '-g', '1337', '-m', 'REDIRECT',
      '-i', '*', '-x', '', '-b', '8080,9090', '-d', '15090,15021,15020',
    ]);
    assert.deepEqual(((init['securityContext'] as Mapping)['capabilities'] as Mapping)['add'], ['NET_ADMIN', 'NET_RAW']);
  });

  it('with holdApplicationUntilProxyStarts, starts the proxy first and holds the app with pilot-agent wait', () => {
    const [doc] = docsOf(inject(workloads['Deployment'] ?? '', { holdApplicationUntilProxyStarts: true }));
    assert.ok(doc);
    validate(doc);
    const containers = (podOf(doc)['spec'] as Mapping)['containers'] as Mapping[];
    assert.deepEqual(names(containers), ['istio-proxy', 'app']);
    assert.deepEqual(containers[0]?.['lifecycle'], { postStart: { exec: { command: ['pilot-agent', 'wait'] } } });
  });

  it('honours the traffic annotations, with "*" for every inbound port', () => {
    const text = (workloads['Deployment'] ?? '').replace('metadata: {labels: {app: web}}',
      'metadata: {labels: {app: web}, annotations: {traffic.sidecar.istio.io/includeInboundPorts: "*", traffic.sidecar.istio.io/excludeInboundPorts: "22000"}}');
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
    rejects(text, /^app\.yaml: document 1 \(Pod\/web\): excludeInboundPorts: port 15020 is also in the captured inbound ports \(metadata\.annotations\["traffic\.sidecar\.istio\.io\/includeInboundPorts"\]\)$/);
  });

  it('refuses a pod that already has an istio-init of its own', () => {
    rejects((workloads['Pod'] ?? '').replace('spec:\n', 'spec:\n  initContainers: [{name: istio-init, image: x}]\n'),
      /^app\.yaml: document 1 \(Pod\/web\): spec\.initContainers: already has an entry named "istio-init"$/);
  });
});
