/**
 * The parts `superviseEnvoy` starts only when asked for: the DNS proxy and
 * the CA client.
 */
import type { CaSettings } from '../ca/ca-settings.ts';
import { startCa, type CaRuntime } from '../ca/start.ts';
import type { DnsRuntime } from '../dns/start.ts';
import type { Registry } from '../metrics/index.ts';
import type { SdsRuntime } from '../sds/start.ts';
import type { dnsEnv } from '../settings/dns-env.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { systemClock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';

export interface DnsInputs {
  settings: EnvValues<typeof dnsEnv>;
  namespace: string;
}

/** The DNS proxy, when on: ISTIO_META_DNS_CAPTURE for a sidecar, or ISTIO_META_ENABLE_DNS_SERVER for any proxy (Istio's rule). */
export async function startDnsWhenOn(config: AgentConfig, options: DnsInputs & { domain: string; node: string; registry: Registry; logger: Logger }): Promise<DnsRuntime | undefined> {
  const { settings } = options;
  if (!(settings.capture && config.proxyType === 'sidecar') && !settings.serverOnly) return undefined;
  // Loaded only when on: the DNS room and dns-packet are not the start's work in a pod without it.
  const { startDns } = await import('../dns/start.ts');
  return startDns({
    address: settings.address, forwardTimeoutMs: settings.forwardTimeoutMs, forwardParallel: settings.forwardParallel,
    pod: { namespace: options.namespace, domain: options.domain }, configPath: config.configPath, node: options.node,
    registry: options.registry, clock: systemClock, logger: options.logger.child({ component: 'dns' }),
  });
}

/** The CA client, when the SDS server's store is ours to feed and no certificate is mounted. */
export async function startCaWhenNeeded(options: { sds: SdsRuntime; caSettings: CaSettings | undefined; registry: Registry; logger: Logger; firstCallAfter: Promise<unknown> }): Promise<CaRuntime | undefined> {
  const { sds, caSettings, registry, logger } = options;
  if (!caSettings || !sds.store) return undefined;
  return startCa({ settings: caSettings, store: sds.store, registry, clock: systemClock, logger: logger.child({ component: 'ca' }), firstCallAfter: options.firstCallAfter });
}

/** /debug/sds shows the CA's side too: identity, serial, issuer, expiry, and why it fails. */
export const withCaDebug = (sds: SdsRuntime, ca: CaRuntime | undefined) => ({ debug: () => (ca ? { ...(sds.debug() as object), ca: ca.debug() } : sds.debug()) });
