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
    mutate: ['src/role/role.ts', 'src/role/downward-api.ts', 'src/role/locality.ts', 'src/role/metadata.ts', 'src/role/private-ip.ts', 'src/role/service-cluster.ts', 'src/role/bounded-json.ts'],
    tests: ['src/role/role.test.ts', 'src/role/downward-api.test.ts', 'src/role/locality.test.ts', 'src/role/metadata.test.ts', 'src/role/private-ip.test.ts', 'src/role/service-cluster.test.ts', 'src/role/bounded-json.test.ts',
      'src/role/private-ip-edges.test.ts', 'src/role/downward-api-edges.test.ts', 'src/role/metadata-edges.test.ts'],
  },
  // Settings parsing: durations and the value parsers of the setting rows.
  settings: {
    mutate: ['src/shared/duration.ts', 'src/settings/parse-values.ts', 'src/settings/settle-values.ts', 'src/settings/env-settings.ts', 'src/settings/pod-env.ts', 'src/settings/xds-env.ts', 'src/settings/agent-inputs.ts'],
    tests: [
      'src/shared/duration.test.ts', 'src/cli/proxy-config.test.ts', 'src/settings/settings-precedence.test.ts', 'src/settings/parse-values.test.ts', 'src/settings/settle-values.test.ts',
      'src/settings/go-bool.test.ts', 'src/settings/agent-inputs.test.ts', 'src/settings/xds-env.test.ts', 'src/settings/env-settings.test.ts', 'src/ca/ca-settings.test.ts',
    ],
  },
  // The proxy command's checks before anything starts: flag combinations, log levels, node metadata, preflight, the xDS transport.
  cli: {
    mutate: ['src/cli/flag-checks.ts', 'src/cli/log-levels.ts', 'src/cli/node-metadata.ts', 'src/cli/preflight.ts', 'src/cli/xds-transport.ts'],
    tests: ['src/cli/flag-checks.test.ts', 'src/cli/log-levels.test.ts', 'src/cli/node-metadata.test.ts', 'src/cli/node-metadata-edges.test.ts', 'src/cli/preflight.test.ts', 'src/cli/preflight-edges.test.ts', 'src/settings/settings-precedence.test.ts'],
  },
};
