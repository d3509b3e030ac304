import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { badFlag } from '../shared/errors.ts';
import { parseHostPort } from '../shared/host-port.ts';
import type { HostPort, ProxyConfig } from '../shared/proxy-config.ts';
import type { ProxyType, Registry } from '../role/role.ts';

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
  applicationPorts: number[];
  prometheusPort: number;
  certDir: string;
}

/** Checks what can be checked without side effects and types the flags. */
export function toProxyConfig(proxyType: ProxyType, flags: ProxyFlagValues): ProxyConfig {
  if (flags.proxyAdminPort === 0) throw badFlag('--proxyAdminPort', 'must not be 0: the agent needs to know where admin listens');
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
    applicationPorts: flags.applicationPorts ?? [],
    prometheusPort: flags.prometheusPort,
    certDir: flags.certDir,
  };
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
