import type { ProxyType, Registry } from '../role/role.ts';

/** A host and port, parsed from a `host:port` flag. */
export interface HostPort {
  host: string;
  port: number;
}

/** Everything `pilot-agent proxy` was told, typed and validated by `cli/`. */
export interface ProxyConfig {
  proxyType: ProxyType;
  registry: Registry;
  ip: string;
  id: string;
  domain: string;
  configPath: string;
  binaryPath: string;
  serviceCluster: string;
  drainDurationMs: number;
  parentShutdownDurationMs: number;
  discoveryAddress: HostPort;
  deltaXds: boolean;
  zipkinAddress?: HostPort;
  connectTimeoutMs: number;
  statsdUdpAddress?: HostPort;
  proxyAdminPort: number;
  controlPlaneAuthPolicy: 'NONE' | 'MUTUAL_TLS';
  customConfigFile?: string;
  templateFile?: string;
  concurrency: number;
  proxyLogLevel: string;
  proxyComponentLogLevel: string;
  statusPort: number;
  applicationPorts: number[];
  /** Envoy's Prometheus listener (15090); 0 lets the kernel pick. */
  prometheusPort: number;
  /** Where the certificates live (cert-chain.pem, key.pem, root-cert.pem). */
  certDir: string;
}
