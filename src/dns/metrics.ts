import { Counter, Histogram, type Registry } from '../metrics/index.ts';

/** Istio's DNS metrics, under the names its agent exports (`pkg/dns/client/monitoring.go`, under the agent's istio_agent_ prefix). */
export function registerDnsMetrics(registry: Registry) {
  const registers = [registry];
  return {
    requests: new Counter({ name: 'istio_agent_dns_requests_total', help: 'Total number of DNS requests.', registers }),
    upstreamRequests: new Counter({ name: 'istio_agent_dns_upstream_requests_total', help: 'Total number of DNS requests forwarded to upstream.', registers }),
    upstreamFailures: new Counter({ name: 'istio_agent_dns_upstream_failures_total', help: 'Total number of DNS failures.', registers }),
    upstreamDuration: new Histogram({
      name: 'istio_agent_dns_upstream_request_duration_seconds',
      help: 'Total time in seconds Istio takes to get DNS response from upstream.',
      buckets: [0.001, 0.005, 0.01, 0.1, 1, 5],
      registers,
    }),
  };
}

export type DnsMetrics = ReturnType<typeof registerDnsMetrics>;
