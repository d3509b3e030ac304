/**
 * Envoy's stats_matcher: the stats Envoy creates at all. Without one, Envoy
 * keeps every stat of every cluster and listener (hundreds of thousands with
 * a few thousand services), which costs memory and start time. The default
 * list is Istio's (pkg/bootstrap/config.go): what readiness, draining and
 * Istio's dashboards read. Users extend it the way Istio's users do.
 */
import type { StatsInclusion } from '../settings/proxy-config-sources.ts';
import { splitList } from '../shared/list.ts';

export interface StatsMatcherInput {
  /** From flags (or env); wins over the pod annotations, as Istio's annotation wins over ProxyConfig. */
  flags: StatsInclusion;
  /** Pod annotations (node metadata ANNOTATIONS): `sidecar.istio.io/statsInclusion{Prefixes,Suffixes,Regexps}`. */
  annotations: Readonly<Record<string, unknown>>;
  /** ProxyConfig.proxyStatsMatcher, once the agent reads ProxyConfig; used when neither above is set. */
  proxyConfig?: StatsInclusion;
  /** Draining until no connection is left reads downstream_cx_active. */
  exitOnZeroActiveConnections: boolean;
  /** Substituted for `{pod_ip}` in patterns. */
  instanceIps: readonly string[];
}

/** Stats the agent and Istio's tooling read: readiness (server, listener_manager, cluster_manager), the xDS cluster, wasm. */
const requiredPrefixes = ['cluster_manager', 'listener_manager', 'server', 'cluster.xds-grpc', 'wasm'];
const rbacSuffixes = ['rbac.allowed', 'rbac.denied', 'shadow_allowed', 'shadow_denied'];
/** Per-route stats of a VirtualService's stat_prefix. */
const requiredRegexps = [String.raw`vhost\..*\.route\..*`];
/** Istio's standard metrics (istio.stats) carry this prefix. */
const standardMetricsPrefix = 'reporter=';
/** Last, as Istio's template has them: `istio_build` (component) and Istio's own `istio.*` stats. */
const istioPrefixes = ['component', 'istio'];

const annotation = (kind: string) => `sidecar.istio.io/statsInclusion${kind}`;

type Pattern = { prefix: string } | { suffix: string } | { safe_regex: { regex: string } };

/** The stats_matcher block of the bootstrap. */
export function statsMatcher(input: StatsMatcherInput): { inclusion_list: { patterns: Pattern[] } } {
  const pick = (kind: 'Prefixes' | 'Suffixes' | 'Regexps', key: keyof StatsInclusion, required: readonly string[]) =>
    substitute(
      [...(input.flags[key] ?? fromAnnotation(input.annotations, annotation(kind)) ?? input.proxyConfig?.[key] ?? []), ...required],
      input.instanceIps,
    );
  const suffixes = input.exitOnZeroActiveConnections ? [...rbacSuffixes, 'downstream_cx_active'] : rbacSuffixes;
  const patterns: Pattern[] = [
    { prefix: standardMetricsPrefix },
    ...pick('Prefixes', 'prefixes', requiredPrefixes).map((prefix) => ({ prefix })),
    ...pick('Suffixes', 'suffixes', suffixes).map((suffix) => ({ suffix })),
    ...pick('Regexps', 'regexps', requiredRegexps).map((regex) => ({ safe_regex: { regex } })),
    ...istioPrefixes.map((prefix) => ({ prefix })),
  ];
  return { inclusion_list: { patterns } };
}

/** A comma-separated list; an empty or missing annotation is unset. */
function fromAnnotation(annotations: Readonly<Record<string, unknown>>, name: string): string[] | undefined {
  const value = annotations[name];
  return typeof value === 'string' && value !== '' ? splitList(value) : undefined;
}

/** `{pod_ip}` stands for each of the proxy's IPs: inbound stats are named after them. */
function substitute(patterns: readonly string[], ips: readonly string[]): string[] {
  return [...new Set(patterns.flatMap((pattern) => (pattern.includes('{pod_ip}') ? ips.map((ip) => pattern.replaceAll('{pod_ip}', ip)) : [pattern])))];
}
