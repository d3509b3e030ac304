/** Istio's locality labels, newest first; Kubernetes labels cannot hold `/`, so `.` stands for it. */
const localityLabels = ['topology.istio.io/locality', 'istio-locality'] as const;

/** The label Istio's agent writes the sanitized locality back to, for istiod. */
export const istioLocalityLabel = 'istio-locality';

/** The pod's locality as `region/zone/subzone` (Istio's SanitizeLocalityLabel), undefined when no label gives one. */
export function localityFromLabels(labels: Readonly<Record<string, string>> | undefined): string | undefined {
  const label = localityLabels.find((key) => labels !== undefined && Object.hasOwn(labels, key));
  const value = label === undefined ? '' : labels![label]!;
  if (value === '') return undefined;
  return value.includes('/') ? value : value.replaceAll('.', '/');
}

/** Envoy's node.locality for a `region/zone/subzone` string; empty parts left out, as Istio's bootstrap does. */
export function envoyLocality(locality: string | undefined): Record<string, string> {
  const [region = '', zone = '', subZone = ''] = (locality ?? '').split('/');
  return Object.fromEntries(Object.entries({ region, zone, sub_zone: subZone }).filter(([, part]) => part !== ''));
}
