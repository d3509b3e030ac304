import { AgentError } from '../shared/errors.ts';

/**
 * Envoy's stats_tags: each regex cuts a part out of a stat's name and turns
 * it into a label (the first group is removed from the name, the second is
 * the value), so `cluster.outbound|80||a.ns.svc.cluster.local;.upstream_rq_200`
 * becomes `envoy_cluster_upstream_rq{cluster_name="outbound|80||…",response_code="200"}`.
 * Istio's dashboards and alerts group by these labels, so the set, the
 * names and what each one matches are Istio's (its envoy_bootstrap.json).
 * istiod names every cluster it sends `<name>;` (alt_stat_name): the `;`
 * ends a name that itself contains dots.
 */
export interface StatsTag {
  tag_name: string;
  regex: string;
}

/** A listener's address as stat names spell it: 10.0.0.1_8080, or [::1]_8080 with hex digits. */
const address = String.raw`(?:[_.[:digit:]]*|[_\[\]aAbBcCdDeEfF[:digit:]]*)`;

/** The tags before the user's extra ones, in Istio's order (the first match of a tag wins). */
const leadingTags: readonly StatsTag[] = [
  { tag_name: 'cluster_name', regex: String.raw`^cluster(\.(.+);)` },
  // The HTTP connection manager's stat_prefix: an address, or a name istiod ends with `;`.
  { tag_name: 'http_conn_manager_prefix', regex: String.raw`^http\.(((?:[_.[:digit:]\w]*|[_\[\]aAbBcCdDeEfF[:digit:]\w\:]*));\.)` },
  { tag_name: 'thread_name', regex: String.raw`^server(\.(.+))\.watchdog` },
  { tag_name: 'tcp_prefix', regex: String.raw`^tcp\.((.*?)\.)\w+?$` },
  { tag_name: 'response_code', regex: String.raw`_rq(_(\d{3}))$` },
  { tag_name: 'response_code_class', regex: String.raw`_rq(_(\dxx))$` },
  { tag_name: 'http_conn_manager_listener_prefix', regex: String.raw`^listener(?=\.).*?\.http\.((${address})\.)` },
  { tag_name: 'listener_address', regex: String.raw`^listener\.((${address})\.)` },
  { tag_name: 'mongo_prefix', regex: String.raw`^mongo\.(.+?)\.(collection|cmd|cx_|op_|delays_|decoding_)(.*?)$` },
];

/** Istio's stats filter and Wasm extensions name their labels inside the stat name; RBAC names the verdict. */
const trailingTags: readonly StatsTag[] = [
  { tag_name: 'cache', regex: String.raw`(cache\.(.+?)\.)` },
  { tag_name: 'component', regex: String.raw`(component\.(.+?)\.)` },
  { tag_name: 'tag', regex: String.raw`(tag\.(.+?);\.)` },
  { tag_name: 'wasm_filter', regex: String.raw`(wasm_filter\.(.+?)\.)` },
  { tag_name: 'authz_enforce_result', regex: String.raw`rbac(\.(allowed|denied))` },
  { tag_name: 'authz_dry_run_action', regex: String.raw`(\.istio_dry_run_(allow|deny)_)` },
  { tag_name: 'authz_dry_run_result', regex: String.raw`(\.shadow_(allowed|denied))` },
];

/** The annotation that adds tags for one pod, as Istio's does. */
export const extraStatTagsAnnotation = 'sidecar.istio.io/extraStatTags';

/**
 * A tag a stats extension adds to its metrics' names as `<tag>=.=<value>;.;`
 * (how Istio's telemetry API puts custom dimensions in): one extractor each.
 */
function extraTag(name: string): StatsTag {
  return { tag_name: name, regex: String.raw`(${name}=\.=(.*?);\.;)` };
}

/** A Prometheus label name: anything else would break the regex or the exposition format. */
const labelName = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface ExtraStatTagsInput {
  /** ProxyConfig extraStatTags. */
  proxyConfig?: readonly string[];
  /** The sidecar.istio.io/extraStatTags annotation, comma-separated. */
  annotation?: string;
}

/** Istio's tags, with ProxyConfig's and the annotation's extra tags (both, once each) in the middle. */
export function statsTags(input: ExtraStatTagsInput): StatsTag[] {
  const fromAnnotation = (input.annotation ?? '').split(',').map((tag) => tag.trim());
  const extra = [...new Set([...(input.proxyConfig ?? []), ...fromAnnotation].filter((tag) => tag !== ''))];
  for (const tag of extra) {
    if (!labelName.test(tag))
      throw new AgentError(
        'BAD_ENV',
        `extraStatTags (ProxyConfig or annotation ${extraStatTagsAnnotation}): "${tag}" is not a label name ([A-Za-z_][A-Za-z0-9_]*)`,
      );
    if ([...leadingTags, ...trailingTags].some((known) => known.tag_name === tag))
      throw new AgentError('BAD_ENV', `extraStatTags (ProxyConfig or annotation ${extraStatTagsAnnotation}): "${tag}" is one of Istio's own tags`);
  }
  return [...leadingTags, ...extra.map(extraTag), ...trailingTags];
}
