import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { splitList } from '../bootstrap/stats-matcher.ts';
import type { CertRotation } from '../sds/cert-dir-feed.ts';
import { istioRootCertPath, istioTokenPath } from '../ca/ca-settings.ts';
import { badFlag } from '../shared/errors.ts';
import { parseHostPort } from '../shared/host-port.ts';
import type { HostPort, ProxyConfig } from '../shared/proxy-config.ts';
import type { ProxyType, Registry } from '../role/role.ts';
import { loadMaterial, type UpstreamOptions } from '../xds/upstream.ts';
import { checkFlagCombinations } from './flag-checks.ts';

/** Commander's view of the proxy flags (names as typed on the command line). */
export interface ProxyFlagValues {
  serviceregistry: Registry;
  ip: string;
  id: string;
  domain: string;
  configPath: string;
  binaryPath: string;
  serviceCluster: string;
  drainDuration: number;
  parentShutdownDuration: number;
  discoveryAddress: string;
  deltaXds: boolean;
  zipkinAddress: string;
  connectTimeout: number;
  statsdUdpAddress: string;
  proxyAdminPort: number;
  controlPlaneAuthPolicy: 'NONE' | 'MUTUAL_TLS';
  customConfigFile: string;
  templateFile: string;
  concurrency: number;
  proxyLogLevel: string;
  proxyComponentLogLevel: string;
  statusPort: number;
  readinessPort: number;
  prometheusPort: number;
  certDir: string;
  ingressCertDir: string;
  certDebounce: number;
  certResync: number;
  retryInitialDelay: number;
  retryBudget: number;
  terminationDrainDuration: number;
  exitOnZeroActiveConnections: boolean;
  minimumDrainDuration: number;
  xdsServerName: string;
  xdsTokenFile: string;
  xdsRootCa: string;
  sdsSocket: string;
  certRotation: CertRotation;
  statsInclusionPrefixes: string;
  statsInclusionSuffixes: string;
  statsInclusionRegexps: string;
  podInfoDir: string;
}

/** Checks what can be checked without side effects and types the flags. */
export function toProxyConfig(proxyType: ProxyType, flags: ProxyFlagValues): ProxyConfig {
  if (flags.proxyAdminPort === 0) throw badFlag('--proxyAdminPort', 'must not be 0: the agent needs to know where admin listens');
  const config = typeFlags(proxyType, flags);
  checkFlagCombinations(config);
  return config;
}

function typeFlags(proxyType: ProxyType, flags: ProxyFlagValues): ProxyConfig {
  return {
    proxyType,
    registry: flags.serviceregistry,
    ip: flags.ip ?? '',
    id: flags.id ?? '',
    domain: flags.domain ?? '',
    configPath: flags.configPath,
    binaryPath: flags.binaryPath,
    serviceCluster: flags.serviceCluster,
    drainDurationMs: flags.drainDuration,
    parentShutdownDurationMs: flags.parentShutdownDuration,
    discoveryAddress: hostPort('--discoveryAddress', flags.discoveryAddress)!,
    deltaXds: flags.deltaXds,
    zipkinAddress: hostPort('--zipkinAddress', flags.zipkinAddress),
    connectTimeoutMs: flags.connectTimeout,
    statsdUdpAddress: hostPort('--statsdUdpAddress', flags.statsdUdpAddress),
    proxyAdminPort: flags.proxyAdminPort,
    controlPlaneAuthPolicy: flags.controlPlaneAuthPolicy,
    customConfigFile: flags.customConfigFile || undefined,
    templateFile: flags.templateFile || undefined,
    concurrency: flags.concurrency,
    proxyLogLevel: flags.proxyLogLevel,
    proxyComponentLogLevel: flags.proxyComponentLogLevel ?? '',
    statusPort: flags.statusPort,
    readinessPort: flags.readinessPort,
    prometheusPort: flags.prometheusPort,
    certDir: flags.certDir,
    ingressCertDir: flags.ingressCertDir,
    certDebounceMs: flags.certDebounce,
    certResyncMs: flags.certResync,
    retryInitialDelayMs: flags.retryInitialDelay,
    retryBudget: flags.retryBudget,
    terminationDrainDurationMs: flags.terminationDrainDuration,
    exitOnZeroActiveConnections: flags.exitOnZeroActiveConnections,
    minimumDrainDurationMs: flags.minimumDrainDuration,
    xdsServerName: flags.xdsServerName || undefined,
    xdsTokenFile: flags.xdsTokenFile || undefined,
    xdsRootCa: flags.xdsRootCa || undefined,
    sdsSocket: absolutePath('--sdsSocket', flags.sdsSocket),
    certRotation: flags.certRotation,
    statsInclusion: {
      prefixes: optionalList(flags.statsInclusionPrefixes),
      suffixes: optionalList(flags.statsInclusionSuffixes),
      regexps: optionalList(flags.statsInclusionRegexps),
    },
    podInfoDir: flags.podInfoDir,
  };
}

/** An empty flag is unset: the annotation or the defaults decide. */
const optionalList = (text: string | undefined) => (text ? splitList(text) : undefined);

/** Envoy's bootstrap and the agent must agree on one path, whatever their working directories. */
function absolutePath(flag: string, path: string): string {
  if (!isAbsolute(path)) throw badFlag(flag, `${path} is not an absolute path`);
  return path;
}

function hostPort(flag: string, text: string | undefined): HostPort | undefined {
  if (!text) return undefined;
  const parsed = parseHostPort(text);
  if (typeof parsed === 'string') throw badFlag(flag, parsed);
  return parsed;
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
export function xdsUpstream(config: ProxyConfig): UpstreamOptions {
  return {
    address: config.discoveryAddress,
    policy: xdsTransport(config),
    rootCaFile: config.xdsRootCa ?? istioRootCertPath,
    certDir: config.certDir,
    serverName: config.xdsServerName,
    tokenFile: config.xdsTokenFile ?? (xdsTransport(config) === 'TLS' ? istioTokenPath : undefined),
  };
}


/**
 * MUTUAL_TLS as asked; else TLS with a token, as istiod's 15012 wants, when
 * a root is given or the port is 15012; else plaintext (15010, our peers).
 */
export function xdsTransport(config: ProxyConfig): UpstreamOptions['policy'] {
  if (config.controlPlaneAuthPolicy === 'MUTUAL_TLS') return 'MUTUAL_TLS';
  return config.xdsRootCa !== undefined || config.discoveryAddress.port === 15012 ? 'TLS' : 'NONE';
}

/** TLS files (present, PEM, key matching cert) and the token file are checked before Envoy starts. */
export async function checkXdsUpstream(config: ProxyConfig): Promise<void> {
  await loadMaterial(xdsUpstream(config));
}
