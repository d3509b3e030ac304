import type { StatsInclusion } from '../bootstrap/stats-matcher.ts';
import type { ProxyType, Registry } from '../role/role.ts';
import type { CertRotation } from '../sds/cert-dir-feed.ts';

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
  /** Envoy's readiness listener (15021), routed to the status server; 0: none. */
  readinessPort: number;
  /** Envoy's Prometheus listener (15090); 0 lets the kernel pick. */
  prometheusPort: number;
  /** Where the certificates live (cert-chain.pem, key.pem, root-cert.pem). */
  certDir: string;
  /** tls.crt and tls.key, watched too for `ingress`. */
  ingressCertDir: string;
  /** Quiet time after the last certificate event before the files are read. */
  certDebounceMs: number;
  /** Period of the re-read that catches a missed file event; 0 turns it off. */
  certResyncMs: number;
  retryInitialDelayMs: number;
  /** Restarts after failures before the agent gives up with exit 1. */
  retryBudget: number;
  /** How long SIGTERM/SIGINT drains before Envoy is stopped. */
  terminationDrainDurationMs: number;
  /** End the termination drain once no downstream connection is left. */
  exitOnZeroActiveConnections: boolean;
  minimumDrainDurationMs: number;
  /** TLS server name of the discovery server (MUTUAL_TLS); its host when absent. */
  xdsServerName?: string;
  /** A token sent to the discovery server as `authorization: Bearer`. */
  xdsTokenFile?: string;
  /** ProxyConfig.proxyStatsMatcher: below the flags and the pod annotations, as in Istio. */
  proxyStatsMatcher?: StatsInclusion;
  /** Root of the discovery server's TLS certificate (XDS_ROOT_CA); implies TLS. */
  xdsRootCa?: string;
  /** The SDS server's Unix socket (bootstrap cluster `sds-grpc`). */
  sdsSocket: string;
  /** How changed certificate files reach Envoy: over SDS, by hot restart, or decided per file. */
  certRotation: CertRotation;
  /** User additions to Envoy's stats inclusion list; unset parts fall back to the pod annotations. */
  statsInclusion: StatsInclusion;
  /** The downward-API files (labels, annotations) for the node metadata. */
  podInfoDir: string;
}
