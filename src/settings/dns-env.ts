import { parseHostPort } from '../shared/host-port.ts';
import { declareEnvSettings } from './env-settings.ts';
import { bool, durationIn } from './parse-values.ts';

/**
 * The DNS proxy's settings, under Istio's env names (`pilot/cmd/pilot-agent/options`).
 * ProxyConfig's `proxyMetadata` (keyed by these same names) is read under the env.
 */
export const dnsEnv = declareEnvSettings({
  capture: {
    env: 'ISTIO_META_DNS_CAPTURE',
    default: 'false',
    parse: bool,
    description: "true: a sidecar answers the pod's DNS (port 53 captured to DNS_PROXY_ADDR by istio-iptables)",
  },
  serverOnly: {
    env: 'ISTIO_META_ENABLE_DNS_SERVER',
    default: 'false',
    parse: bool,
    description: 'true: serve DNS on DNS_PROXY_ADDR for any proxy type, without capture (gateways)',
  },
  address: { env: 'DNS_PROXY_ADDR', default: 'localhost:15053', parse: (text) => hostPort(text), description: 'Where the DNS proxy listens, UDP and TCP' },
  forwardTimeoutMs: { env: 'DNS_FORWARD_TIMEOUT', default: '5s', parse: durationIn({ minMs: 1 }), description: 'How long one upstream resolver may take' },
  forwardParallel: {
    env: 'DNS_FORWARD_PARALLEL',
    default: 'false',
    parse: bool,
    description: 'true: ask every resolver of resolv.conf at once, take the first answer',
  },
});

function hostPort(text: string) {
  const parsed = parseHostPort(text);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
}
