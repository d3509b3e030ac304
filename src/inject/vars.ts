import { badFlag } from '../shared/errors.ts';
import { checkInboundConflicts } from '../iptables/config.ts';
import { parseCidrSelection, parsePort, parsePortList, parsePortSelection, type PortSelection } from '../iptables/ports.ts';
import type { TemplateVars } from './template.ts';
import { isMapping, type InjectValues, type Mapping, type PodTemplate } from './types.ts';

/** Per-pod overrides of the capture settings, as in Istio. */
export const trafficAnnotations = {
  includeInboundPorts: 'traffic.sidecar.istio.io/includeInboundPorts',
  excludeInboundPorts: 'traffic.sidecar.istio.io/excludeInboundPorts',
  includeOutboundIPRanges: 'traffic.sidecar.istio.io/includeOutboundIPRanges',
  excludeOutboundIPRanges: 'traffic.sidecar.istio.io/excludeOutboundIPRanges',
} as const;

/** Everything the template may name for this pod: the values plus what the pod decides. */
export function podVars(pod: PodTemplate, values: InjectValues, workloadName: string, warn?: (line: string) => void): TemplateVars {
  const labels = stringMap(pod.metadata['labels']);
  const appName = labels['app'] ?? labels['app.kubernetes.io/name'] ?? workloadName;
  return {
    ...values,
    ...captureVars(pod, values, warn),
    workloadName,
    // $(POD_NAMESPACE) is expanded by the kubelet from the container's env.
    serviceCluster: appName === '' ? 'istio-proxy' : `${appName}.$(POD_NAMESPACE)`,
    serviceAccountName: typeof pod.spec['serviceAccountName'] === 'string' ? pod.spec['serviceAccountName'] : 'default',
    podLabelsJson: JSON.stringify(labels),
    proxyConfigJson: JSON.stringify(proxyConfig(values)),
    podPortsJson: JSON.stringify(podPorts(pod)),
    appContainers: (pod.spec['containers'] as Mapping[]).map((container) => String(container['name'])).join(','),
  };
}

/** PROXY_CONFIG: the ProxyConfig (protojson) this pod's proxy runs with, as istiod reads it from the node. */
function proxyConfig(values: InjectValues): Record<string, unknown> {
  return {
    discoveryAddress: values.discoveryAddress,
    statusPort: values.statusPort,
    terminationDrainDuration: `${values.terminationDrainDurationSeconds}s`,
    ...(values.holdApplicationUntilProxyStarts ? { holdApplicationUntilProxyStarts: true } : {}),
  };
}

/** ISTIO_META_POD_PORTS: the app containers' ports, as Kubernetes serializes them. */
function podPorts(pod: PodTemplate): Mapping[] {
  return (pod.spec['containers'] as Mapping[])
    .flatMap((container) => (Array.isArray(container['ports']) ? (container['ports'] as unknown[]) : []))
    .filter(isMapping)
    .map((port) => ({
      ...(typeof port['name'] === 'string' ? { name: port['name'] } : {}),
      containerPort: port['containerPort'],
      protocol: port['protocol'] ?? 'TCP',
    }));
}

const stringMap = (value: unknown): Record<string, string> => (isMapping(value) ? (value as Record<string, string>) : {});

type TrafficKey = keyof typeof trafficAnnotations;

/** The pod's traffic annotations, each with the field path that names it in errors. */
function annotationReader(pod: PodTemplate) {
  const annotations = stringMap(pod.metadata['annotations']);
  return {
    value: (key: TrafficKey): string | undefined => annotations[trafficAnnotations[key]],
    field: (key: TrafficKey) => `${at(pod, 'metadata.annotations')}["${trafficAnnotations[key]}"]`,
  };
}

/** The istio-init lists for this pod, checked the way `istio-iptables` will check them. */
function captureVars(pod: PodTemplate, values: InjectValues, warn?: (line: string) => void): Record<string, string> {
  const annotation = annotationReader(pod);
  // The values' exclusions (the proxy's own ports) always apply; the annotation adds to them.
  const exclude = [...new Set([
    ...parsePortList('values.excludeInboundPorts', values.excludeInboundPorts),
    ...parsePortList(annotation.field('excludeInboundPorts'), annotation.value('excludeInboundPorts') ?? ''),
  ])];
  const include = inboundPorts(pod, values, annotation.value('includeInboundPorts'), annotation.field('includeInboundPorts'));
  if (include.explicit) checkInboundConflicts(include.ports, exclude, { include: include.from, exclude: 'excludeInboundPorts' });
  const captured = include.explicit ? include.ports : without(include.ports, exclude);
  if (captured !== '*' && captured.length === 0) warn?.(noInboundCaptureLine(pod, include));
  return {
    // Ports taken from the containers simply skip the excluded ones; only lists someone wrote can conflict.
    includeInboundPorts: portsText(captured),
    excludeInboundPorts: portsText(exclude),
    includeOutboundIPRanges: outboundRanges('includeOutboundIPRanges', values, annotation),
    excludeOutboundIPRanges: outboundRanges('excludeOutboundIPRanges', values, annotation),
  };
}

function outboundRanges(
  key: 'includeOutboundIPRanges' | 'excludeOutboundIPRanges',
  values: InjectValues,
  annotation: ReturnType<typeof annotationReader>,
): string {
  const annotated = annotation.value(key);
  parseCidrSelection(annotated === undefined ? `values.${key}` : annotation.field(key), annotated ?? values[key]);
  return annotated ?? values[key];
}

interface InboundPorts {
  ports: PortSelection;
  explicit: boolean;
  from: string;
}

/**
 * Capturing no inbound port is valid (Istio honours an empty list) but lets
 * plaintext from the pod network reach the app around mTLS and
 * authorization: never silent.
 */
function noInboundCaptureLine(pod: PodTemplate, include: InboundPorts): string {
  const why = include.explicit
    ? `${include.from} is empty`
    : `values.includeInboundPorts is empty and no container declares a port (${at(pod, 'spec.containers')})`;
  return `${at(pod, 'metadata')}: no inbound port is captured (${why}): traffic from the pod network reaches the app without mTLS or authorization`;
}

/** Annotation, else values ('*' by default, as Istio's chart), else (values '') the pod's containerPorts (Istio 1.1's default). */
function inboundPorts(pod: PodTemplate, values: InjectValues, annotation: string | undefined, field: string): InboundPorts {
  // Checked whichever list wins: a bad containerPort is a bad pod, captured or not.
  const declared = containerPorts(pod);
  if (annotation !== undefined) return { ports: parsePortSelection(field, annotation), explicit: true, from: field };
  if (values.includeInboundPorts.trim() !== '') {
    return { ports: parsePortSelection('values.includeInboundPorts', values.includeInboundPorts), explicit: true, from: 'values.includeInboundPorts' };
  }
  return { ports: declared, explicit: false, from: '' };
}

function containerPorts(pod: PodTemplate): number[] {
  const ports = (pod.spec['containers'] as Mapping[]).flatMap((container, index) => {
    const list = container['ports'] ?? [];
    const where = `${at(pod, 'spec.containers')}[${index}].ports`;
    if (!Array.isArray(list)) throw badFlag(where, 'must be a list');
    return list.map((port: unknown, portIndex) => {
      const value = isMapping(port) ? port['containerPort'] : undefined;
      return parsePort(`${where}[${portIndex}].containerPort`, String(value));
    });
  });
  return [...new Set(ports)];
}

const without = (ports: PortSelection, excluded: readonly number[]): PortSelection =>
  ports === '*' ? ports : ports.filter((port) => !excluded.includes(port));

const portsText = (ports: PortSelection): string => (ports === '*' ? '*' : ports.join(','));

/** A field's full path in the document, for error lines. */
export const at = (pod: PodTemplate, field: string): string => [...pod.path, field].join('.');
