/**
 * The rooms that guard the pod, as mutation testing sees them: the files
 * Stryker mutates and the unit tests that must catch the mutants. A room
 * is run alone (`npm run mutation -- <room>`) or all in turn (no argument);
 * each room reports its own score.
 */
export const rooms = {
  // Status access (who may reach what) and readiness.
  status: {
    mutate: ['src/status/access.ts', 'src/status/readiness.ts'],
    tests: ['src/status/access.test.ts', 'src/status/readiness.test.ts', 'src/status/readiness-edges.test.ts', 'src/status/handler.test.ts', 'src/status/status.test.ts'],
  },
  // SDS resource names and the secret store.
  sds: {
    mutate: ['src/sds/resource-names.ts', 'src/sds/secret-store.ts'],
    tests: ['src/sds/resource-names.test.ts', 'src/sds/secret-store.test.ts', 'src/sds/sds-stream.test.ts'],
  },
  // The checks on what the CA sends: check-chain.ts, and checkIssued, which turns a checked
  // chain into what is served (the rest of workload-certificates.ts is renewal scheduling).
  ca: {
    mutate: ['src/ca/check-chain.ts', 'src/ca/workload-certificates.ts:182-196'],
    tests: ['src/ca/check-chain.test.ts', 'src/ca/check-chain-edges.test.ts', 'src/ca/check-issued.test.ts', 'src/ca/workload-certificates.test.ts'],
  },
  // The cert-set checks and the restart gate.
  certs: {
    mutate: ['src/watch/cert-set.ts', 'src/agent/restart-gate.ts'],
    tests: ['src/watch/cert-set.test.ts', 'src/agent/restart-gate.test.ts', 'src/agent/restart-gate-edges.test.ts'],
  },
  // iptables rules.
  iptables: {
    mutate: ['src/iptables/rules.ts', 'src/iptables/config.ts'],
    tests: ['src/iptables/rules.test.ts', 'src/iptables/config.test.ts', 'src/iptables/config-edges.test.ts', 'src/iptables/config-flags.test.ts', 'src/iptables/apply.test.ts'],
  },
  // What the bootstrap exposes: the 0.0.0.0 listeners and the template renderer.
  bootstrap: {
    mutate: ['src/bootstrap/exact-path-listener.ts', 'src/bootstrap/readiness.ts', 'src/bootstrap/template.ts'],
    tests: ['src/bootstrap/exact-path-listener.test.ts', 'src/bootstrap/exposure.test.ts', 'src/bootstrap/template.test.ts', 'src/bootstrap/template-edges.test.ts'],
  },
  // The xDS frame and size limits.
  xds: {
    mutate: ['src/grpc/grpc-frame.ts', 'src/grpc/field-scanner.ts'],
    tests: ['src/grpc/grpc-frame.test.ts', 'src/grpc/grpc-frame-edges.test.ts', 'src/grpc/field-scanner.test.ts', 'src/grpc/field-scanner-edges.test.ts'],
  },
  // The role and node id checks.
  role: {
    mutate: ['src/role/role.ts'],
    tests: ['src/role/role.test.ts'],
  },
  // Settings parsing: durations and the value parsers of the setting rows.
  settings: {
    mutate: ['src/shared/duration.ts', 'src/settings/parse-values.ts', 'src/settings/settle-values.ts'],
    tests: ['src/shared/duration.test.ts', 'src/cli/proxy-config.test.ts', 'src/settings/settings-precedence.test.ts', 'src/settings/parse-values.test.ts', 'src/settings/settle-values.test.ts'],
  },
  // The xDS relay's core: each stream's phases, legs and endings, the relay's streams, predial and
  // spares, and whether a new Envoy would get config; run over an in-memory AdsStream and a scripted upstream.
  'xds-relay': {
    mutate: [
      'src/xds/relay/relay-stream.ts', 'src/xds/relay/relay.ts', 'src/xds/relay/config-availability.ts', 'src/xds/relay/spare-upstreams.ts',
      'src/xds/relay/ending.ts', 'src/xds/relay/request-leg.ts', 'src/xds/relay/response-leg.ts', 'src/xds/relay/stream-flow.ts', 'src/xds/relay/response-tap.ts',
    ],
    tests: [
      'src/xds/relay/relay-stream.test.ts', 'src/xds/relay/relay-stream-stages.test.ts', 'src/xds/relay/relay.test.ts', 'src/xds/relay/config-availability.test.ts', 'src/xds/relay/spare-upstreams.test.ts',
      'src/xds/relay/ending.test.ts', 'src/xds/relay/stats.test.ts', 'src/xds/relay/http2-ads-stream.test.ts',
    ],
  },
};
