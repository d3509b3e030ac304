import { createHash } from 'node:crypto';
import { badFlag } from '../shared/errors.ts';
import { rewriteAppProbes, type ProbeRewrite } from './app-probes.ts';
import { placeProxy, proxyName, proxyPlacement, type ListAddition } from './proxy-placement.ts';
import { mergePrometheusAnnotations } from './prometheus-merge.ts';
import { renderTemplate } from './template.ts';
import { isMapping, type InjectionInputs, type InjectionTemplate, type Mapping, type PodTemplate } from './types.ts';
import { at, podVars } from './vars.ts';

export const statusAnnotation = 'sidecar.istio.io/status';
export const injectAnnotation = 'sidecar.istio.io/inject';
const rewriteProbesAnnotation = 'sidecar.istio.io/rewriteAppHTTPProbers';
const mergeMetricsAnnotation = 'prometheus.istio.io/merge-metrics';

export type Decision = 'inject' | 'injected-already' | 'disabled' | 'host-network';

const annotationsOf = (meta: Mapping): Record<string, string> => (isMapping(meta['annotations']) ? (meta['annotations'] as Record<string, string>) : {});
const isFalse = (value: string | undefined) => typeof value === 'string' && ['false', 'no', 'n', 'off', '0', 'f'].includes(value.toLowerCase());

/**
 * Whether to inject: not twice (status annotation or a proxy container is
 * there, native or not), not where the pod or its workload says
 * `sidecar.istio.io/inject: "false"`, and not into host-network pods, whose
 * capture rules would rewrite the node's own traffic (Istio skips them too).
 */
export function decideInjection(pod: PodTemplate, workloadMetadata: Mapping): Decision {
  const podAnnotations = annotationsOf(pod.metadata);
  const all = [...(pod.spec['containers'] as Mapping[]), ...((pod.spec['initContainers'] ?? []) as Mapping[])];
  if (podAnnotations[statusAnnotation] !== undefined || all.some((c) => c['name'] === proxyName)) return 'injected-already';
  if (isFalse(podAnnotations[injectAnnotation] ?? annotationsOf(workloadMetadata)[injectAnnotation])) return 'disabled';
  return pod.spec['hostNetwork'] === true ? 'host-network' : 'inject';
}

/** What injection does to a pod; the caller edits the document so the rest stays as written. */
export interface PodPatch {
  /** New annotation values; null removes the key. */
  annotations: Readonly<Record<string, string | null>>;
  lists: readonly ListAddition[];
  /** App containers whose probes now go through the agent. */
  probeRewrites: readonly ProbeRewrite[];
}

/** Renders the template for this pod, moves app probes and metrics to the agent, and checks names. */
export function buildPodPatch(pod: PodTemplate, inputs: InjectionInputs, workloadName: string): PodPatch {
  const { values } = inputs;
  const annotations = annotationsOf(pod.metadata);
  const probes = values.rewriteAppHTTPProbers && !isFalse(annotations[rewriteProbesAnnotation])
    ? rewriteAppProbes(pod.spec['containers'] as Mapping[], values.statusPort, at(pod, 'spec.containers'))
    : { rewrites: [], probers: undefined };
  const metrics = values.prometheusMerge && !isFalse(annotations[mergeMetricsAnnotation])
    ? mergePrometheusAnnotations(annotations, values.statusPort, at(pod, 'metadata.annotations'))
    : undefined;
  const env = { ...metaEnv(values.proxyMetadata), ISTIO_KUBE_APP_PROBERS: probes.probers, ISTIO_PROMETHEUS_ANNOTATIONS: metrics?.env };
  const rendered = renderTemplate(inputs.template, podVars(pod, values, workloadName, inputs.warn), inputs.templatePath);
  const added = withInitArgs(withInitEnv(withProxyEnv(rendered, env), metaEnv(values.proxyMetadata)), values.nativeNftables ? ['--native-nftables'] : []);
  const lists = placeProxy(added, proxyPlacement(values));
  for (const addition of lists) checkNames(pod, addition);
  return { annotations: { ...metrics?.annotations, [statusAnnotation]: statusOf(lists, inputs) }, lists, probeRewrites: probes.rewrites };
}

const initName = 'istio-init';

/** Each `proxyMetadata` entry becomes ISTIO_META_<NAME> on the proxy (and on istio-init). */
const metaEnv = (metadata: Record<string, string>) => Object.fromEntries(Object.entries(metadata).map(([name, value]) => [`ISTIO_META_${name}`, value]));

function withProxyEnv(template: InjectionTemplate, env: Record<string, string | undefined>): InjectionTemplate {
  const extra = Object.entries(env).filter(([, value]) => value !== undefined).map(([name, value]) => ({ name, value }));
  if (extra.length === 0) return template;
  const containers = template.containers.map((c) => (c['name'] === proxyName ? { ...c, env: [...((c['env'] ?? []) as Mapping[]), ...extra] } : c));
  return { ...template, containers };
}

/**
 * istio-init gets the metadata env too, as Istio's template gives it
 * proxyMetadata: `istio-iptables` reads ISTIO_META_DNS_CAPTURE (DNS capture)
 * and others from there, so the capture matches what the agent serves.
 */
function withInitEnv(template: InjectionTemplate, env: Record<string, string>): InjectionTemplate {
  const extra = Object.entries(env).map(([name, value]) => ({ name, value }));
  if (extra.length === 0) return template;
  const initContainers = template.initContainers.map((c) => (c['name'] === initName ? { ...c, env: [...((c['env'] ?? []) as Mapping[]), ...extra] } : c));
  return { ...template, initContainers };
}

/** Flags istio-init gets only when the values ask (the template has no conditions): Istio's `{{ if .Values.global.nativeNftables }}`. */
function withInitArgs(template: InjectionTemplate, args: readonly string[]): InjectionTemplate {
  if (args.length === 0) return template;
  const initContainers = template.initContainers.map((c) => (c['name'] === initName ? { ...c, args: [...((c['args'] ?? []) as string[]), ...args] } : c));
  return { ...template, initContainers };
}

/** A name clash means someone half-injected this pod by hand. */
function checkNames(pod: PodTemplate, addition: ListAddition): void {
  const names = new Set(((pod.spec[addition.field] ?? []) as Mapping[]).map((item) => item['name']));
  const clash = addition.items.find((item) => names.has(item['name']));
  if (clash !== undefined) throw badFlag(at(pod, `spec.${addition.field}`), `already has an entry named "${String(clash['name'])}"`);
}

/** Istio's status annotation: what was added, and a hash of the template and values used. */
function statusOf(lists: readonly ListAddition[], inputs: InjectionInputs): string {
  const names = (field: ListAddition['field']) =>
    lists.filter((list) => list.field === field).flatMap((list) => list.items.map((item) => String(item['name'])));
  const version = createHash('sha256').update(JSON.stringify([inputs.template, inputs.values])).digest('hex').slice(0, 16);
  return JSON.stringify({
    version,
    initContainers: names('initContainers'),
    containers: names('containers'),
    volumes: names('volumes'),
    imagePullSecrets: null,
  });
}
