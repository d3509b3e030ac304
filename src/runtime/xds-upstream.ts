import { existsSync } from 'node:fs';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { certFilesIn, istioRootCertPath, istioTokenPath } from '../shared/istio-files.ts';
import { loadMaterial, type UpstreamOptions } from '../xds/upstream/material.ts';

/*
 * The relay's upstream as the flags make it, checked before anything starts
 * (the CLI's preflight): the only place outside the relay's start that reads xds/.
 */

/**
 * Where and how the xDS relay reaches the discovery server; `metadata` goes on every call (settings/xds-env.ts).
 * PROV_CERT (a VM's /etc/certs) holds the client certificate offered to istiod when it is there, as Istio's GetKeyCertsForXDS.
 */
export function xdsUpstream(config: AgentConfig, metadata: Record<string, string> = { clusterid: '' }, provCert?: string): UpstreamOptions {
  const transport = xdsTransport(config);
  const policy = transport === 'TLS' && provCert !== undefined ? 'MUTUAL_TLS' : transport;
  return {
    address: config.discoveryAddress,
    policy,
    rootCaFile: xdsRootCaFile(config, existsSync, provCert),
    certDir: provCert ?? config.certDir,
    serverName: config.xdsServerName,
    tokenFile: config.xdsTokenFile ?? (policy === 'NONE' ? undefined : istioTokenPath),
    metadata,
  };
}

/**
 * The root istiod's certificate must chain to, in Istio's order
 * (FindRootCAForXDS): the flag or XDS_ROOT_CA (`SYSTEM`: the OS store), then
 * a root mounted with the certificates (Istio 1.1's /etc/certs), then
 * PROV_CERT's (not checked: a VM's may come later), then the
 * root istiod publishes (its configmap, mounted at /var/run/secrets/istio).
 */
export function xdsRootCaFile(config: AgentConfig, exists: (path: string) => boolean = existsSync, provCert?: string): string {
  if (config.xdsRootCa !== undefined) return config.xdsRootCa;
  const mounted = certFilesIn(config.certDir).root;
  if (exists(mounted)) return mounted;
  return provCert === undefined ? istioRootCertPath : certFilesIn(provCert).root;
}

/**
 * MUTUAL_TLS given (Istio 1.1's templates, istio-start.sh): TLS with the token, and our certificate files when
 * they are there. Else
 * TLS with a token, as istiod's 15012 wants and Istio's default MUTUAL_TLS
 * means today, when a root is given or the port is 15012; else plaintext
 * (Istio 1.1's 15010, our peers).
 */
export function xdsTransport(config: AgentConfig): UpstreamOptions['policy'] {
  if (config.controlPlaneAuthPolicy === 'MUTUAL_TLS' && config.controlPlaneAuthPolicyGiven === true) return 'MUTUAL_TLS';
  return config.xdsRootCa !== undefined || config.discoveryAddress.port === 15012 ? 'TLS' : 'NONE';
}

/** The policy Istio's agent would report for this transport: MUTUAL_TLS is how it names TLS to istiod. */
export function effectiveAuthPolicy(config: AgentConfig): 'NONE' | 'MUTUAL_TLS' {
  return xdsTransport(config) === 'NONE' ? 'NONE' : 'MUTUAL_TLS';
}

/** TLS files (present, PEM, key matching cert) and the token file are checked before Envoy starts. */
export async function checkXdsUpstream(upstream: UpstreamOptions): Promise<void> {
  await loadMaterial(upstream);
}
