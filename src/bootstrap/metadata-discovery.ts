import { goBool } from '../settings/parse-values.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';

/**
 * Istio's peer metadata discovery: a bootstrap extension of Istio's own
 * Envoy build (`istio.workload.BootstrapExtension`) that learns workload
 * metadata over ADS. On when the node says METADATA_DISCOVERY
 * (PEER_METADATA_DISCOVERY, else ENABLE_HBONE) and always for a waypoint,
 * as Istio's bootstrap decides; never on State of the World, which it has
 * no form for. Upstream Envoy has no such extension and refuses the
 * bootstrap (validate.ts says which build is needed).
 */
export const metadataDiscoveryTypeUrl = 'type.googleapis.com/istio.workload.BootstrapExtension';

/** Asked for by the node or the waypoint role, whatever the xDS flavour. */
export function metadataDiscoveryAsked(config: Pick<AgentConfig, 'proxyType'>, metadata: Readonly<Record<string, unknown>>): boolean {
  const value = metadata.METADATA_DISCOVERY;
  return config.proxyType === 'waypoint' || ((typeof value === 'string' || typeof value === 'boolean') && goBool(String(value)) === true);
}

/** The bootstrap_extensions entry, or none. */
export function metadataDiscoveryExtensions(config: Pick<AgentConfig, 'proxyType' | 'deltaXds'>, metadata: Readonly<Record<string, unknown>>): unknown[] {
  if (!config.deltaXds || !metadataDiscoveryAsked(config, metadata)) return [];
  return [{
    name: 'metadata_discovery',
    typed_config: { '@type': 'type.googleapis.com/udpa.type.v1.TypedStruct', type_url: metadataDiscoveryTypeUrl, value: { config_source: { ads: {} } } },
  }];
}
