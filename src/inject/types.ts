/** A YAML mapping as read from a manifest, before any checks. */
export type Mapping = Record<string, unknown>;

/** The values file: what the injection template may vary. */
export interface InjectValues {
  image: string;
  imagePullPolicy: string;
  discoveryAddress: string;
  controlPlaneAuthPolicy: string;
  proxyLogLevel: string;
  proxyComponentLogLevel: string;
  agentLogLevel: string;
  statusPort: number;
  concurrency: number;
  /** Env TERMINATION_DRAIN_DURATION_SECONDS of the proxy. */
  terminationDrainDurationSeconds: number;
  holdApplicationUntilProxyStarts: boolean;
  kubernetesVersion: string;
  rewriteAppHTTPProbers: boolean;
  prometheusMerge: boolean;
  clusterDomain: string;
  clusterId: string;
  meshId: string;
  trustDomain: string;
  caAddress: string;
  pilotCertProvider: string;
  tokenAudience: string;
  rootCertConfigMap: string;
  proxyUID: number;
  proxyGID: number;
  interceptionMode: string;
  /** Istio's global.nativeNftables: istio-init writes the capture as nftables tables (`--native-nftables`). */
  nativeNftables: boolean;
  outboundCapturePort: number;
  inboundCapturePort: number;
  includeInboundPorts: string;
  excludeInboundPorts: string;
  includeOutboundIPRanges: string;
  excludeOutboundIPRanges: string;
  resources: Mapping;
  proxyMetadata: Record<string, string>;
}

/** What the template adds to a pod; rendered once per pod. */
export interface InjectionTemplate {
  initContainers: readonly Mapping[];
  containers: readonly Mapping[];
  volumes: readonly Mapping[];
  /** Merged into the proxy container when the app must wait for it (Kubernetes < 1.29). */
  holdApplicationLifecycle?: Mapping | undefined;
  /** Merged into the proxy container when it runs as a native sidecar. */
  nativeSidecarLifecycle?: Mapping | undefined;
}

/** The template plus the values, with where each came from for error lines. */
export interface InjectionInputs {
  template: InjectionTemplate;
  templatePath: string;
  values: InjectValues;
  /** Told of a choice that is valid but dangerous (e.g. no inbound capture), one line each; unset: silent. */
  warn?: (line: string) => void;
}

/** A workload's pod template (or a Pod itself), found in a manifest document. */
export interface PodTemplate {
  /** Key path from the document root to the object holding metadata and spec. */
  path: readonly string[];
  metadata: Mapping;
  spec: Mapping;
}

export const isMapping = (value: unknown): value is Mapping =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
