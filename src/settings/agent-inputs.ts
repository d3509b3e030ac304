import type { ProxyType } from './proxy-type.ts';
import { bootstrapEnv } from './bootstrap-env.ts';
import { dnsEnv } from './dns-env.ts';
import { readEnvSettings, readEnvText, type EnvValues } from './env-settings.ts';
import { caEnv } from './ca-env.ts';
import { platformEnv } from './platform-env.ts';
import { podEnv, readNodeEnv, readPodEnv, type NodeEnv, type PodEnv } from './pod-env.ts';
import { readPodInfo, type PodInfo } from './pod-info.ts';
import { readProxyConfigSources, type MergedProxyConfig } from './proxy-config-sources.ts';
import type { AgentConfig } from './proxy-settings.ts';
import { proxylessEnv } from './proxyless-env.ts';
import { resolveAgentConfig, type CommandLineSource } from './resolve-agent-config.ts';
import { workingDirPath } from './settle-values.ts';
import { statusEnv } from './status-env.ts';
import { wasmEnv } from './wasm-env.ts';
import { xdsCallMetadata } from './xds-env.ts';

/** Everything the proxy command reads from its env, typed; checked at once, before anything is made. */
export interface AgentEnv {
  status: EnvValues<typeof statusEnv>;
  proxyless: EnvValues<typeof proxylessEnv>;
  /** Under the real env: ProxyConfig's proxyMetadata (ISTIO_META_DNS_CAPTURE, …), as Istio's agent reads it. */
  dns: EnvValues<typeof dnsEnv>;
  wasm: EnvValues<typeof wasmEnv>;
  /** Under the real env: proxyMetadata, as for DNS (METRICS_LOCALHOST_ACCESS_ONLY is a proxyMetadata key in Istio). */
  bootstrap: EnvValues<typeof bootstrapEnv>;
  pod: PodEnv;
  node: NodeEnv;
  /** CLOUD_PLATFORM and GCP's zone and metadata host: the node's locality when no pod label gives one. */
  platform: EnvValues<typeof platformEnv>;
  /** ISTIO_KUBE_APP_PROBERS and ISTIO_PROMETHEUS_ANNOTATIONS as set: status/ parses them against the status port. */
  app: { probers?: string; prometheusAnnotations?: string };
  hostIp?: string;
  /** POD_NAMESPACE, '' when unset: the DNS proxy's search domain. */
  namespace: string;
  /** gRPC metadata on every xDS call (ISTIO_META_CLUSTER_ID, XDS_HEADER_*). */
  xdsMetadata: Record<string, string>;
  /** PROV_CERT: a VM's provisioned certificates (the xDS and CA roots, and our client certificate when there). */
  provCert?: string;
}

/**
 * The typed env; the first bad value throws, naming its variable (exit 2),
 * or the proxyMetadata field of `proxyMetadataSource` it came from.
 */
export function readAgentEnv(env: NodeJS.ProcessEnv, proxyMetadata?: Readonly<Record<string, string>>, proxyMetadataSource = 'ProxyConfig'): AgentEnv {
  const sourceOf = (name: string) => (env[name] || !proxyMetadata?.[name] ? `env ${name}` : `${proxyMetadataSource}: field proxyMetadata.${name}`);
  return {
    status: readEnvSettings(env, statusEnv),
    proxyless: readEnvSettings(env, proxylessEnv),
    dns: readEnvSettings({ ...proxyMetadata, ...env }, dnsEnv, sourceOf),
    wasm: readEnvSettings(env, wasmEnv),
    bootstrap: readEnvSettings({ ...proxyMetadata, ...env }, bootstrapEnv),
    pod: readPodEnv(env),
    node: readNodeEnv(env),
    platform: readEnvSettings(env, platformEnv),
    app: { probers: readEnvText(env, podEnv.appProbers), prometheusAnnotations: readEnvText(env, podEnv.prometheusAnnotations) },
    hostIp: readEnvText(env, podEnv.hostIp),
    namespace: readEnvText(env, caEnv.namespace) ?? '',
    xdsMetadata: xdsCallMetadata(env),
    provCert: readEnvText(env, caEnv.provCert),
  };
}

export interface AgentInputs {
  config: AgentConfig;
  /** ProxyConfig fields that set a flag, for the start-up log. */
  applied: string[];
  /** The mesh file's defaultConfig, PROXY_CONFIG and the pod annotation, merged. */
  proxyConfig: MergedProxyConfig;
  env: AgentEnv;
  /** The downward-API labels and annotations, read once: the annotation's ProxyConfig above, the node's LABELS and ANNOTATIONS. */
  podInfo: PodInfo;
}

export interface ReadAgentInputsOptions {
  proxyType: ProxyType;
  commandLine: CommandLineSource;
  env: NodeJS.ProcessEnv;
  meshConfigPath: string;
  podInfoDir: string;
}

/**
 * The whole typed input of `pilot-agent proxy`: flags over env over
 * PROXY_CONFIG over the mesh file over the annotation over the defaults,
 * and every env-only setting. Bad input throws, naming it (exit 2).
 */
export async function readAgentInputs(options: ReadAgentInputsOptions): Promise<AgentInputs> {
  const { env } = options;
  const podInfo = await readPodInfo(workingDirPath(options.podInfoDir));
  const proxyConfig = await readProxyConfigSources({ env, meshConfigPath: options.meshConfigPath, podInfoDir: options.podInfoDir, podInfo });
  const { config, applied } = resolveAgentConfig({ proxyType: options.proxyType, commandLine: options.commandLine, proxyConfig, env });
  const proxyMetadata = proxyConfig.value.proxyMetadata as Record<string, string> | undefined;
  return { config, applied, proxyConfig, env: readAgentEnv(env, proxyMetadata, proxyConfig.origin.proxyMetadata), podInfo };
}
