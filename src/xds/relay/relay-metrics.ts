import { Counter, Gauge, type Registry } from '../../metrics/index.ts';

/**
 * The relay's metrics in the registry the status server exposes: ours
 * (istio_agent_xds_*) and Istio's own names for the same events, which its
 * dashboards and alerts query.
 */
export function registerRelayMetrics(registry: Registry, lastKnownGoodSince: () => number | undefined) {
  const registers = [registry];
  const counter = <L extends string = never>(name: string, help: string, labelNames: L[] = []) => new Counter<L>({ name, help, labelNames, registers });
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
  return { ...streamMetrics(counter, gauge), ...lastKnownGoodMetrics(counter, gauge, registers, lastKnownGoodSince) };
}

type MakeCounter = <L extends string = never>(name: string, help: string, labelNames?: L[]) => Counter<L>;
type MakeGauge = (name: string, help: string) => Gauge;

function streamMetrics(counter: MakeCounter, gauge: MakeGauge) {
  return {
    requests: counter('istio_agent_xds_proxy_requests', 'xDS requests relayed from Envoy to the discovery server', ['type']),
    responses: counter('istio_agent_xds_proxy_responses', 'xDS responses relayed from the discovery server to Envoy', ['type']),
    bytes: counter('istio_agent_xds_proxy_bytes_total', 'xDS message bytes relayed, by direction', ['type', 'direction']),
    nacks: counter('istio_agent_xds_proxy_nacks_total', 'xDS responses Envoy rejected', ['type']),
    dials: counter(
      'istio_agent_xds_proxy_upstream_dials_total',
      'Connections to the discovery server, by credential (token, certificate+token…) and result (connected, certificate_refused, failed)',
      ['credential', 'result'],
    ),
    upstreamFailures: counter('istio_agent_xds_proxy_upstream_failures_total', 'Upstream streams that failed (connect or mid-stream)', ['code']),
    terminations: counter('istio_agent_xds_proxy_stream_terminations_total', 'Relayed streams ended, by reason', ['reason']),
    istiodFailures: counter('istio_agent_istiod_connection_failures', 'Connections to the discovery server that failed'),
    istiodTerminations: counter(
      'istio_agent_istiod_connection_terminations',
      'Upstream xDS streams ended by the discovery server: cancelled (closed), error',
      ['type'],
    ),
    envoyTerminations: counter('istio_agent_envoy_connection_terminations', 'xDS streams ended by Envoy: cancelled (closed), error (a bad frame)', ['type']),
    streams: gauge('istio_agent_xds_proxy_streams', 'Envoy xDS streams open through the relay'),
    upstreams: gauge(
      'istio_agent_xds_proxy_upstreams_connected',
      'Upstream streams to the discovery server that are open (the upstream state: 0 means disconnected)',
    ),
  };
}

function lastKnownGoodMetrics(counter: MakeCounter, gauge: MakeGauge, registers: Registry[], lastKnownGoodSince: () => number | undefined) {
  return {
    lastKnownGoodStreams: gauge(
      'istio_agent_xds_last_known_good_streams',
      'Envoy xDS streams served from the last-known-good config (the discovery server unreachable)',
    ),
    lastKnownGoodSince: new Gauge({
      name: 'istio_agent_xds_last_known_good_since_seconds',
      help: 'Unix time since which Envoy is served from the last-known-good config; 0 when it is not',
      registers,
      collect() {
        const since = lastKnownGoodSince();
        this.set(since === undefined ? 0 : since / 1000);
      },
    }),
    lastKnownGoodResponses: counter('istio_agent_xds_last_known_good_responses_total', 'Responses the agent sent Envoy from the last-known-good ' +
      'config', ['type']),
    lastKnownGoodNacks: counter('istio_agent_xds_last_known_good_nacks_total', 'Last-known-good responses Envoy rejected', ['type']),
  };
}
