import { createHash } from 'node:crypto';
import { badFlag } from '../shared/errors.ts';
import { renderTemplate } from './template.ts';
import { isMapping, type InjectionInputs, type InjectionTemplate, type Mapping, type PodTemplate } from './types.ts';
import { at, podVars } from './vars.ts';

export const statusAnnotation = 'sidecar.istio.io/status';
export const injectAnnotation = 'sidecar.istio.io/inject';
const proxyName = 'istio-proxy';

export type Decision = 'inject' | 'injected-already' | 'disabled' | 'host-network';

/**
 * Whether to inject: not twice (status annotation or a proxy container is
 * there), not where the pod or its workload says `sidecar.istio.io/inject:
 * "false"`, and not into host-network pods, whose capture rules would
 * rewrite the node's own traffic (Istio skips them too).
 */
export function decideInjection(pod: PodTemplate, workloadMetadata: Mapping): Decision {
  const annotations = (meta: Mapping) => (isMapping(meta['annotations']) ? meta['annotations'] : {});
  const podAnnotations = annotations(pod.metadata);
  const containers = pod.spec['containers'] as Mapping[];
  if (podAnnotations[statusAnnotation] !== undefined || containers.some((c) => c['name'] === proxyName)) {
    return 'injected-already';
  }
  const optOut = podAnnotations[injectAnnotation] ?? annotations(workloadMetadata)[injectAnnotation];
  if (typeof optOut === 'string' && ['false', 'no', 'n', 'off'].includes(optOut.toLowerCase())) return 'disabled';
  return pod.spec['hostNetwork'] === true ? 'host-network' : 'inject';
}

/** Items to add to one list of the pod spec, at its start or its end. */
export interface ListAddition {
  field: 'initContainers' | 'containers' | 'volumes';
  items: readonly Mapping[];
  atStart: boolean;
}

/** What injection adds to a pod; the caller edits the document so the rest stays as written. */
export interface PodPatch {
  annotations: Readonly<Record<string, string>>;
  lists: readonly ListAddition[];
}

/** Renders the template for this pod and checks it fits into the pod's lists. */
export function buildPodPatch(pod: PodTemplate, inputs: InjectionInputs, workloadName: string): PodPatch {
  const vars = podVars(pod, inputs.values, workloadName);
  const added = withProxyMetadata(renderTemplate(inputs.template, vars, inputs.templatePath), inputs.values.proxyMetadata);
  const hold = inputs.values.holdApplicationUntilProxyStarts;
  const proxies = hold ? added.containers.map((c) => holdApplication(c, added.holdApplicationLifecycle)) : added.containers;
  const lists: ListAddition[] = [
    { field: 'initContainers', items: added.initContainers, atStart: false },
    // Kubelet starts containers in order: with hold, the proxy goes first.
    { field: 'containers', items: proxies, atStart: hold },
    { field: 'volumes', items: added.volumes, atStart: false },
  ];
  for (const addition of lists) checkNames(pod, addition);
  return { annotations: { [statusAnnotation]: statusOf(added, inputs) }, lists };
}

/** Each `proxyMetadata` entry becomes ISTIO_META_<NAME> on the proxy. */
function withProxyMetadata(template: InjectionTemplate, metadata: Record<string, string>): InjectionTemplate {
  const extra = Object.entries(metadata).map(([name, value]) => ({ name: `ISTIO_META_${name}`, value }));
  if (extra.length === 0) return template;
  const containers = template.containers.map((c) =>
    c['name'] === proxyName ? { ...c, env: [...((c['env'] ?? []) as Mapping[]), ...extra] } : c,
  );
  return { ...template, containers };
}

function holdApplication(container: Mapping, lifecycle: Mapping | undefined): Mapping {
  if (container['name'] !== proxyName || lifecycle === undefined) return container;
  return { ...container, lifecycle: { ...(container['lifecycle'] as Mapping | undefined), ...lifecycle } };
}

/** A name clash means someone half-injected this pod by hand. */
function checkNames(pod: PodTemplate, addition: ListAddition): void {
  const names = new Set(((pod.spec[addition.field] ?? []) as Mapping[]).map((item) => item['name']));
  const clash = addition.items.find((item) => names.has(item['name']));
  if (clash !== undefined) throw badFlag(at(pod, `spec.${addition.field}`), `already has an entry named "${String(clash['name'])}"`);
}

/** Istio's status annotation: what was added, and a hash of the template and values used. */
function statusOf(added: InjectionTemplate, inputs: InjectionInputs): string {
  const names = (list: readonly Mapping[]) => list.map((item) => String(item['name']));
  const version = createHash('sha256').update(JSON.stringify([inputs.template, inputs.values])).digest('hex').slice(0, 16);
  return JSON.stringify({
    version,
    initContainers: names(added.initContainers),
    containers: names(added.containers),
    volumes: names(added.volumes),
    imagePullSecrets: null,
  });
}
