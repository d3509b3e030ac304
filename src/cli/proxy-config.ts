import { constants, existsSync } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { istioRootCertPath, istioTokenPath } from '../settings/ca-env.ts';
import { badFlag } from '../shared/errors.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { certFileNames, loadMaterial, type UpstreamOptions } from '../xds/upstream.ts';
import { checkFlagCombinations } from './flag-checks.ts';

/**
 * What can be checked of the resolved config without side effects: ports
 * that collide, a parent shutdown before the drain ends, admin on port 0.
 */
export function checkResolvedConfig(config: AgentConfig): AgentConfig {
  if (config.proxyAdminPort === 0) throw badFlag('--proxyAdminPort', 'must not be 0: the agent needs to know where admin listens');
  checkFlagCombinations(config);
  return config;
}

/** The Envoy binary must exist and be executable before anything starts. */
export async function checkBinary(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) throw badFlag('--binaryPath', `${path} does not exist or is not a file`);
  await access(path, constants.X_OK).catch(() => {
    throw badFlag('--binaryPath', `${path} is not executable`);
  });
}

/** Where and how the xDS relay reaches the discovery server. */
export function xdsUpstream(config: AgentConfig): UpstreamOptions {
  return {
    address: config.discoveryAddress,
    policy: xdsTransport(config),
    rootCaFile: xdsRootCaFile(config),
    certDir: config.certDir,
    serverName: config.xdsServerName,
    tokenFile: config.xdsTokenFile ?? (xdsTransport(config) === 'TLS' ? istioTokenPath : undefined),
  };
}

/**
 * The root istiod's certificate must chain to, in Istio's order
 * (FindRootCAForXDS): the flag or XDS_ROOT_CA (`SYSTEM`: the OS store), then
 * a root mounted with the certificates (Istio 1.1's /etc/certs), then the
 * root istiod publishes (its configmap, mounted at /var/run/secrets/istio).
 */
export function xdsRootCaFile(config: AgentConfig, exists: (path: string) => boolean = existsSync): string {
  if (config.xdsRootCa !== undefined) return config.xdsRootCa;
  const mounted = join(config.certDir, certFileNames.root);
  return exists(mounted) ? mounted : istioRootCertPath;
}

/**
 * MUTUAL_TLS as asked; else TLS with a token, as istiod's 15012 wants, when
 * a root is given or the port is 15012; else plaintext (15010, our peers).
 */
export function xdsTransport(config: AgentConfig): UpstreamOptions['policy'] {
  if (config.controlPlaneAuthPolicy === 'MUTUAL_TLS') return 'MUTUAL_TLS';
  return config.xdsRootCa !== undefined || config.discoveryAddress.port === 15012 ? 'TLS' : 'NONE';
}

/** TLS files (present, PEM, key matching cert) and the token file are checked before Envoy starts. */
export async function checkXdsUpstream(config: AgentConfig): Promise<void> {
  await loadMaterial(xdsUpstream(config));
}
