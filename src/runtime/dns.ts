import type { DnsRuntime } from '../dns/start.ts';
import type { dnsEnv } from '../settings/dns-env.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import { roomDeps, type RuntimeContext } from './context.ts';

export interface DnsInputs {
  settings: EnvValues<typeof dnsEnv>;
  namespace: string;
}

/** The DNS proxy, when on: ISTIO_META_DNS_CAPTURE for a sidecar, or ISTIO_META_ENABLE_DNS_SERVER for any proxy (Istio's rule). */
export async function startDnsPart(ctx: RuntimeContext, inputs: DnsInputs & { domain: string; node: string }): Promise<DnsRuntime | undefined> {
  const { settings } = inputs;
  if (!(settings.capture && ctx.config.proxyType === 'sidecar') && !settings.serverOnly) return undefined;
  // Loaded only when on: the DNS room and dns-packet are not the start's work in a pod without it.
  const { startDns } = await import('../dns/start.ts');
  return startDns({
    address: settings.address, forwardTimeoutMs: settings.forwardTimeoutMs, forwardParallel: settings.forwardParallel,
    pod: { namespace: inputs.namespace, domain: inputs.domain }, configPath: ctx.config.configPath, node: inputs.node, ...roomDeps(ctx, 'dns'),
  });
}
