import { readFileSync } from 'node:fs';

// One function of a file, as Stryker's `file:from-to` line range: found by name, so edits above it do not move the range.
function only(file, name) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const from = lines.findIndex((line) => new RegExp(`^(export )?(async )?function ${name}\\(`).test(line));
  const to = lines.findIndex((line, index) => index > from && line === '}');
  if (from < 0 || to < 0) throw new Error(`mutation/rooms.mjs: no function ${name} in ${file}`);
  const doc = lines[from - 1]?.startsWith('/**') ? 1 : 0;
  return `${file}:${from + 1 - doc}-${to + 1}`;
}

/**
 * The rooms that guard the pod, as mutation testing sees them: the files
 * Stryker mutates and the unit tests that must catch the mutants. A room
 * is run alone (`npm run mutation -- <room>`) or all in turn (no argument);
 * each room reports its own score.
 */
export const rooms = {
  // The status port: access (who may reach what), readiness, content negotiation,
  // the Prometheus merge (metadata-filter, merged-metrics: the streamed page) and its capped fetch, the
  // pipelining gate, the scrape gate, the body's streaming (send-body), the app probes' parsing, target and redirects, and the
  // server's slot release and gzip choice (server.ts's tracked and encode). Left out: the rest of
  // server.ts (listening and wiring: the e2e tests run it), handler.ts routing (its tests run in the room),
  // the probes' HTTP and gRPC clients (sockets, e2e status-app-probes) and app-metrics.ts.
  status: {
    mutate: [
      'src/status/access.ts',
      'src/status/readiness.ts',
      'src/status/negotiate.ts',
      'src/status/prometheus.ts',
      'src/status/pipeline.ts',
      'src/status/scrape-gate.ts',
      'src/status/metadata-filter.ts',
      'src/status/merged-metrics.ts',
      'src/status/send-body.ts',
      'src/status/app-probes/config.ts',
      'src/status/app-probes/probe-target.ts',
      'src/status/app-probes/redirects.ts',
      only('src/status/server.ts', 'tracked'),
      only('src/status/server.ts', 'encode'),
    ],
    tests: [
      'src/status/access.test.ts',
      'src/status/readiness.test.ts',
      'src/status/readiness-edges.test.ts',
      'src/status/readiness-epochs.test.ts',
      'src/status/handler.test.ts',
      'src/status/status.test.ts',
      'src/status/negotiate.test.ts',
      'src/status/prometheus.test.ts',
      'src/status/server.test.ts',
      'src/status/server-connections.test.ts',
      'src/status/pipeline.test.ts',
      'src/status/scrape-gate.test.ts',
      'src/status/scrape-gate-edges.test.ts',
      'src/status/metadata-filter.test.ts',
      'src/status/merged-metrics.test.ts',
      'src/status/send-body.test.ts',
      'src/status/merged-metrics-edges.test.ts',
      'src/status/pipeline-edges.test.ts',
      'src/status/prometheus-stream.test.ts',
      'src/status/readiness-judge-edges.test.ts',
      'src/status/app-probes/config.test.ts',
      'src/status/app-probes/probe-target.test.ts',
      'src/status/app-probes/redirects.test.ts',
    ],
  },
  // The metrics' text: the Prometheus exposition (what every scrape reads), and each metric's text
  // written from its series (metric.ts). Left out: the counters and histograms (in-process values, no outside input) and runtime.ts.
  metrics: {
    mutate: ['src/metrics/exposition.ts', 'src/metrics/metric.ts'],
    tests: ['src/metrics/exposition.test.ts', 'src/metrics/registry.test.ts', 'src/metrics/metric-text.test.ts', 'src/metrics/metric-names.test.ts'],
  },
  // SDS: resource names, the secret store, each stream's requests (sds-stream), the socket
  // path, the workload's secrets from the dir or the CA (workload-secrets), file-backed names (file-sources) and the log budget.
  // Excluded: sds-server.ts and start.ts (grpc-js wiring, in test/e2e/sds-*), secret-proto.ts,
  // pem-secret.ts and metrics.ts (encoders of our own data, no outside input).
  sds: {
    mutate: [
      'src/sds/resource-names.ts',
      'src/sds/secret-store.ts',
      'src/sds/sds-stream.ts',
      'src/sds/socket.ts',
      'src/sds/workload-secrets.ts',
      'src/sds/file-sources.ts',
      'src/sds/log-budget.ts',
    ],
    tests: [
      'src/sds/resource-names.test.ts',
      'src/sds/secret-store.test.ts',
      'src/sds/sds-stream.test.ts',
      'src/sds/socket.test.ts',
      'src/sds/workload-secrets.test.ts',
      'src/sds/file-sources.test.ts',
      'src/sds/file-sources-lifecycle.test.ts',
      'src/sds/log-budget.test.ts',
    ],
  },
  // The checks on what the CA sends: check-chain.ts, and checkIssued, which turns a checked
  // chain into what is served (the rest of workload-certificates.ts is renewal scheduling).
  ca: {
    mutate: ['src/ca/check-chain.ts', only('src/ca/workload-certificates.ts', 'checkIssued')],
    tests: ['src/ca/check-chain.test.ts', 'src/ca/check-chain-edges.test.ts', 'src/ca/check-issued.test.ts', 'src/ca/workload-certificates.test.ts'],
  },
  // Certificate rotation: its one owner (runtime/rotation.ts: SDS push or a new epoch) and the restart gate
  // (the cert-set checks it reads are the watch room's).
  certs: {
    mutate: ['src/runtime/rotation.ts', 'src/agent/restart-gate.ts'],
    tests: ['src/runtime/rotation.test.ts', 'src/agent/restart-gate.test.ts', 'src/agent/restart-gate-edges.test.ts', 'src/runtime/sotw-fallback.test.ts'],
  },
  // iptables rules, and what turns flags and env into them: the port lists, the checks on
  // bad input, the capture plan and the policy routes. Left out: render/state/apply/host
  // (running iptables-restore and ip) and validation.ts (it passes only when a real REDIRECT
  // moves its probe), covered by the netns e2e tests (iptables-modes-netns, iptables-ipv6-netns);
  // flags.ts (the flag rows).
  iptables: {
    mutate: ['src/iptables/rules.ts', 'src/iptables/config.ts', 'src/iptables/routes.ts', 'src/iptables/plan.ts', 'src/iptables/ports.ts'],
    tests: [
      'src/iptables/rules.test.ts',
      'src/iptables/config.test.ts',
      'src/iptables/config-edges.test.ts',
      'src/iptables/config-flags.test.ts',
      'src/iptables/apply.test.ts',
      'src/iptables/routes.test.ts',
      'src/iptables/hostile-lists.test.ts',
      'src/iptables/ports.test.ts',
      'src/iptables/rules-edges.test.ts',
    ],
  },
  // The native nftables capture (istio-iptables --native-nftables): the rules and the transaction that
  // writes them. Left out: apply.ts (runs nft and the iptables save programs), covered by the netns e2e
  // tests (nftables-netns, nftables-istio-netns); plan.ts's tables are data, checked through the goldens.
  nftables: {
    mutate: ['src/nftables/rules.ts', 'src/nftables/inbound.ts', 'src/nftables/dns.ts', 'src/nftables/render.ts', 'src/nftables/plan.ts'],
    tests: ['src/nftables/rules.test.ts'],
  },
  // What the bootstrap exposes: the pod-facing listeners, where they bind, and the template renderer.
  bootstrap: {
    mutate: [
      'src/bootstrap/exact-path-listener.ts',
      'src/bootstrap/listener-hosts.ts',
      'src/bootstrap/metadata-discovery.ts',
      'src/bootstrap/readiness.ts',
      'src/bootstrap/secure-metrics.ts',
      'src/bootstrap/self-discovery.ts',
      'src/bootstrap/stats-annotations.ts',
      'src/bootstrap/template.ts',
    ],
    tests: [
      'src/bootstrap/exact-path-listener.test.ts',
      'src/bootstrap/listener-hosts.test.ts',
      'src/bootstrap/metadata-discovery.test.ts',
      'src/bootstrap/secure-metrics.test.ts',
      'src/bootstrap/self-discovery.test.ts',
      'src/bootstrap/stats-annotations.test.ts',
      'src/bootstrap/exposure.test.ts',
      'src/bootstrap/template.test.ts',
      'src/bootstrap/template-edges.test.ts',
    ],
  },
  // gRPC on the wire: the frame and size limits, the field scanner, varints (proto-wire), the
  // status codes, calls served on node:http2 (server-call), the probe's source address resolver
  // and the discovery messages (discovery/wire.ts). Excluded: load.ts, keepalive.ts and unary.ts
  // (grpc-js loading and options, no outside input of their own).
  grpc: {
    mutate: [
      'src/grpc/grpc-frame.ts',
      'src/grpc/field-scanner.ts',
      'src/grpc/proto-wire.ts',
      'src/grpc/grpc-status.ts',
      'src/grpc/server-call.ts',
      'src/grpc/source-address.ts',
      'src/discovery/wire.ts',
    ],
    tests: [
      'src/grpc/grpc-frame.test.ts',
      'src/grpc/grpc-frame-edges.test.ts',
      'src/grpc/field-scanner.test.ts',
      'src/grpc/field-scanner-edges.test.ts',
      'src/grpc/proto-wire.test.ts',
      'src/grpc/proto-wire-read.test.ts',
      'src/grpc/grpc-status.test.ts',
      'src/grpc/server-call.test.ts',
      'src/grpc/source-address.test.ts',
      'src/discovery/wire.test.ts',
      'src/discovery/wire-schema.test.ts',
    ],
  },
  // The dial to the discovery server: address and TLS choice (dial), call credentials (the
  // token file) and the TLS material files. Excluded: session.ts (the HTTP/2 session and its
  // windows, driven by the relay's e2e tests).
  'xds-upstream': {
    mutate: ['src/xds/upstream/dial.ts', 'src/xds/upstream/credentials.ts', 'src/xds/upstream/material.ts'],
    tests: [
      'src/xds/upstream/dial.test.ts',
      'src/xds/upstream/credentials.test.ts',
      'src/xds/upstream/material.test.ts',
      'src/xds/upstream/material-files.test.ts',
    ],
  },
  // Last-known-good config: its file codec, the file (read bounded and no-follow), its settings,
  // what a stream records and what is pending an ACK. Excluded: serve.ts and wire.ts (answering
  // Envoy from what was recorded, in test/e2e/xds-last-known-good*).
  'xds-lkg': {
    mutate: [
      'src/xds/last-known-good/codec.ts',
      'src/xds/last-known-good/file.ts',
      'src/xds/last-known-good/config.ts',
      'src/xds/last-known-good/session.ts',
      'src/xds/last-known-good/pending-responses.ts',
      'src/xds/last-known-good/recorder.ts',
      'src/xds/last-known-good/delta-subscription.ts',
    ],
    tests: [
      'src/xds/last-known-good/codec.test.ts',
      'src/xds/last-known-good/file.test.ts',
      'src/xds/last-known-good/pending-responses.test.ts',
      'src/xds/last-known-good/config.test.ts',
      'src/xds/last-known-good/recorder.test.ts',
      'src/xds/last-known-good/delta-subscription.test.ts',
      'src/xds/last-known-good/session.test.ts',
      'src/xds/last-known-good/last-known-good.test.ts',
    ],
  },
  // The role and node id checks.
  role: {
    mutate: [
      'src/role/role.ts',
      'src/role/locality.ts',
      'src/role/platform-locality.ts',
      'src/role/metadata.ts',
      'src/role/private-ip.ts',
      'src/role/service-cluster.ts',
      'src/role/bounded-json.ts',
    ],
    tests: [
      'src/role/role.test.ts',
      'src/role/locality.test.ts',
      'src/role/platform-locality.test.ts',
      'src/role/metadata.test.ts',
      'src/role/private-ip.test.ts',
      'src/role/service-cluster.test.ts',
      'src/role/bounded-json.test.ts',
      'src/role/private-ip-edges.test.ts',
      'src/role/metadata-edges.test.ts',
    ],
  },
  // Settings parsing: durations, lists, the value parsers of the setting rows and the downward-API files (read once).
  settings: {
    mutate: [
      'src/shared/duration.ts',
      'src/shared/list.ts',
      'src/shared/downward-api.ts',
      'src/settings/pod-info.ts',
      'src/settings/parse-values.ts',
      'src/settings/settle-values.ts',
      'src/settings/env-settings.ts',
      'src/settings/pod-env.ts',
      'src/settings/xds-env.ts',
      'src/settings/bootstrap-env.ts',
      'src/settings/platform-env.ts',
      'src/settings/agent-inputs.ts',
    ],
    tests: [
      'src/shared/duration.test.ts',
      'src/shared/list.test.ts',
      'src/shared/downward-api.test.ts',
      'src/shared/downward-api-edges.test.ts',
      'src/settings/pod-info.test.ts',
      'src/settings/proxy-config-sources.test.ts',
      'src/settings/settings-precedence.test.ts',
      'src/settings/parse-values.test.ts',
      'src/settings/settle-values.test.ts',
      'src/settings/go-bool.test.ts',
      'src/settings/agent-inputs.test.ts',
      'src/settings/xds-env.test.ts',
      'src/settings/env-settings.test.ts',
      'src/settings/env-rows.test.ts',
      'src/ca/ca-settings.test.ts',
    ],
  },
  // The proxy command's checks before anything starts: flag combinations, log levels, node metadata, preflight, the proxy type, the xDS transport;
  // and the process guard (signals, and a fault no caller handled: one line, the proxy stopped, exit 1).
  cli: {
    mutate: [
      'src/cli/flag-checks.ts',
      'src/cli/log-levels.ts',
      'src/runtime/node-metadata.ts',
      'src/cli/preflight.ts',
      'src/runtime/preflight.ts',
      'src/cli/proxy-type.ts',
      'src/settings/proxy-type.ts',
      'src/runtime/xds-upstream.ts',
      'src/runtime/process-guard.ts',
    ],
    tests: [
      'src/cli/flag-checks.test.ts',
      'src/cli/proxy-type.test.ts',
      'src/cli/log-levels.test.ts',
      'src/runtime/node-metadata.test.ts',
      'src/runtime/node-metadata-edges.test.ts',
      'src/cli/preflight.test.ts',
      'src/cli/preflight-edges.test.ts',
      'src/runtime/preflight.test.ts',
      'src/settings/settings-precedence.test.ts',
      'src/runtime/process-guard.test.ts',
      'src/runtime/process-guard-edges.test.ts',
    ],
  },
  // The DNS proxy: what handles a query, a forwarder's answer, an NDS table or the last-known-good
  // table file. Left out: start.ts (wiring, run by the e2e tests) and metrics.ts (counter declarations).
  dns: {
    mutate: [
      'src/dns/answer.ts',
      'src/dns/answer-match.ts',
      'src/dns/forwarder.ts',
      'src/dns/last-known-good-table.ts',
      'src/dns/lookup-table.ts',
      'src/dns/name-table-wire.ts',
      'src/dns/query-header.ts',
      'src/dns/resolv-conf.ts',
      'src/dns/server.ts',
      'src/dns/table-store.ts',
      'src/dns/tcp-connection.ts',
    ],
    tests: [
      'src/dns/query-header.test.ts',
      'src/dns/answer-match.test.ts',
      'src/dns/name-table-wire.test.ts',
      'src/dns/answer.test.ts',
      'src/dns/answer-edges.test.ts',
      'src/dns/answer-hostile.test.ts',
      'src/dns/forwarder.test.ts',
      'src/dns/forwarder-spoof.test.ts',
      'src/dns/forwarder-edges.test.ts',
      'src/dns/last-known-good-table.test.ts',
      'src/dns/last-known-good-table-edges.test.ts',
      'src/dns/lookup-table.test.ts',
      'src/dns/resolv-conf.test.ts',
      'src/dns/server.test.ts',
      'src/dns/server-hostile.test.ts',
      'src/dns/server-forward.test.ts',
      'src/dns/table-store.test.ts',
      'src/dns/tcp-connection.test.ts',
      'src/dns/tcp-connection-edges.test.ts',
      'src/dns/start.test.ts',
    ],
  },
  // Wasm fetching: what a registry, a redirect or an ECDS answer can send. Left out: start.ts
  // and fetch-module.ts (wiring), metrics.ts (counters), proto.ts (the Any encoder of what we send).
  wasm: {
    mutate: [
      'src/wasm/ssrf.ts',
      'src/shared/cidr.ts',
      'src/wasm/http-get.ts',
      'src/wasm/oci-fetch.ts',
      'src/wasm/unbox.ts',
      'src/wasm/convert.ts',
      'src/wasm/module-cache.ts',
      'src/wasm/ecds-response.ts',
      'src/wasm/retry.ts',
    ],
    tests: [
      'src/wasm/ssrf.test.ts',
      'src/wasm/http-get.test.ts',
      'src/wasm/oci-fetch.test.ts',
      'src/wasm/oci-fetch-edges.test.ts',
      'src/wasm/unbox.test.ts',
      'src/wasm/convert.test.ts',
      'src/wasm/module-cache.test.ts',
      'src/wasm/module-cache-shared.test.ts',
      'src/wasm/module-cache-edges.test.ts',
      'src/wasm/ecds-response.test.ts',
      'src/wasm/retry.test.ts',
    ],
  },
  // pilot-agent inject: what a pod manifest and its annotations turn into. Left out: load.ts,
  // yaml.ts, manifest.ts (reading and walking documents), template.ts and pod.ts (rendering Istio's template).
  inject: {
    mutate: ['src/inject/vars.ts', 'src/inject/values.ts', 'src/inject/sidecar.ts', 'src/inject/app-probes.ts', 'src/inject/prometheus-merge.ts'],
    tests: [
      'src/inject/manifest.test.ts',
      'src/inject/golden.test.ts',
      'src/inject/template.test.ts',
      'src/inject/values.test.ts',
      'src/inject/vars.test.ts',
      'src/inject/sidecar.test.ts',
      'src/inject/app-probes.test.ts',
      'src/inject/prometheus-merge.test.ts',
    ],
  },
  // The proxyless gRPC bootstrap file.
  grpcxds: {
    mutate: ['src/grpcxds/bootstrap.ts'],
    tests: ['src/grpcxds/bootstrap.test.ts'],
  },
  // Envoy's side: its command line, the start-check plan and the one verdict, LIVE of this epoch only,
  // how an epoch ended (a forced kill too), its output, leftovers, drain, admin, the cert check.
  envoy: {
    mutate: [
      'src/envoy/args.ts',
      'src/envoy/exit.ts',
      'src/envoy/output.ts',
      'src/envoy/validate.ts',
      'src/envoy/start-check.ts',
      'src/envoy/live.ts',
      'src/envoy/leftovers.ts',
      'src/envoy/drain.ts',
      'src/envoy/admin.ts',
      'src/envoy/cert-check.ts',
      'src/envoy/active-connections.ts',
      'src/envoy/stderr-fifo.ts',
    ],
    tests: [
      'src/envoy/args.test.ts',
      'src/envoy/exit.test.ts',
      'src/envoy/output.test.ts',
      'src/envoy/validate.test.ts',
      'src/envoy/start-check.test.ts',
      'src/envoy/live.test.ts',
      'src/envoy/leftovers.test.ts',
      'src/envoy/drain.test.ts',
      'src/envoy/admin.test.ts',
      'src/envoy/cert-check.test.ts',
      'src/envoy/active-connections.test.ts',
      'src/envoy/output-edges.test.ts',
      'src/envoy/cert-check-edges.test.ts',
      'src/envoy/active-connections-edges.test.ts',
      'src/envoy/leftovers-edges.test.ts',
      'src/envoy/envoy-process.test.ts',
      'src/envoy/stderr-fifo.test.ts',
      'src/envoy/validate-runs.test.ts',
    ],
  },
  // Envoy's log components (generated from the binary): module-level data, so Stryker runs every test
  // of a room for each of its mutants; alone here, that is one test against the binary.
  'envoy-components': {
    mutate: ['src/settings/envoy-components.ts'],
    tests: ['src/settings/envoy-components.test.ts'],
  },
  // The certificate files: which files (cert-files), their consistency check (cert-set), the debounced watch (cert-watch).
  watch: {
    mutate: ['src/watch/cert-set.ts', 'src/watch/cert-files.ts', 'src/watch/cert-watch.ts'],
    tests: ['src/watch/cert-set.test.ts', 'src/watch/cert-files.test.ts', 'src/watch/cert-watch.test.ts'],
  },
  // The reconcile reducer (its failure and shutdown rules) and the shutdown's drain wait. The restart gate is the certs room's:
  // one room per file, so a whole run mutates it once.
  agent: {
    mutate: ['src/agent/reconcile.ts', 'src/agent/reconcile-failures.ts', 'src/agent/reconcile-shutdown.ts', 'src/agent/drain-wait.ts'],
    tests: ['src/agent/reconcile.test.ts', 'src/agent/reconcile-logs.test.ts', 'src/agent/reconcile-shutdown.test.ts', 'src/agent/agent.test.ts', 'src/agent/drain-wait.test.ts'],
  },
  // A VM's workload health (ProxyConfig.readinessProbe): the probe's settings, the thresholds, the verdicts. Left out:
  // probe.ts (it runs commands and sockets: probe.test.ts and the e2e vm-workload-group test run it).
  health: {
    mutate: ['src/health/probe-config.ts', 'src/health/checker.ts', 'src/health/reports.ts'],
    tests: [
      'src/health/probe-config.test.ts',
      'src/health/checker.test.ts',
      'src/health/checker-edges.test.ts',
      'src/health/reports.test.ts',
      'src/xds/relay/health-forward.test.ts',
    ],
  },
  // The composition root: the parts, their order and their undoing; the loop, its one way to a new epoch, its epoch tracker and metrics.
  runtime: {
    mutate: [
      'src/runtime/envoy-recipe.ts',
      'src/runtime/proxyless-recipe.ts',
      'src/runtime/envoy-loop.ts',
      'src/runtime/epochs.ts',
      'src/runtime/process-hooks.ts',
      'src/runtime/events.ts',
      'src/runtime/context.ts',
      'src/runtime/memory-saver.ts',
      'src/runtime/prepare-run.ts',
      'src/runtime/prepare-bootstrap.ts',
      'src/runtime/run-plan.ts',
      'src/runtime/sockets.ts',
    ],
    tests: [
      'src/runtime/sotw-fallback.test.ts',
      'src/runtime/memory-saver.test.ts',
      'src/runtime/prepare-run.test.ts',
      'src/runtime/prepare-run-app.test.ts',
      'src/runtime/prepare-run-edges.test.ts',
      'src/runtime/prepare-bootstrap.test.ts',
      'src/runtime/run-plan.test.ts',
      'src/runtime/envoy-recipe.test.ts',
      'src/runtime/envoy-recipe-xds.test.ts',
      'src/runtime/envoy-recipe-parts.test.ts',
      'src/runtime/proxyless-recipe.test.ts',
      'src/runtime/events.test.ts',
      'src/runtime/relay.test.ts',
      'src/runtime/envoy-loop.test.ts',
      'src/runtime/epochs.test.ts',
      'src/runtime/epochs-metrics.test.ts',
      'src/runtime/rotation.test.ts',
    ],
  },
  // The xDS relay's core: each stream's phases, legs and endings, the relay's streams, predial and
  // spares, and whether a new Envoy would get config; run over an in-memory AdsStream and a scripted upstream.
  'xds-relay': {
    mutate: [
      'src/xds/relay/relay-stream.ts',
      'src/xds/relay/relay.ts',
      'src/xds/relay/config-availability.ts',
      'src/xds/relay/spare-upstreams.ts',
      'src/xds/relay/ending.ts',
      'src/xds/relay/request-leg.ts',
      'src/xds/relay/response-leg.ts',
      'src/xds/relay/stream-flow.ts',
      'src/xds/relay/response-tap.ts',
      'src/xds/relay/health-forward.ts',
    ],
    tests: [
      'src/xds/relay/relay-stream.test.ts',
      'src/xds/relay/relay-stream-trailers.test.ts',
      'src/xds/relay/relay-stream-upstream.test.ts',
      'src/xds/relay/health-forward.test.ts',
      'src/xds/relay/relay-stream-stages.test.ts',
      'src/xds/relay/relay.test.ts',
      'src/xds/relay/config-availability.test.ts',
      'src/xds/relay/spare-upstreams.test.ts',
      'src/xds/relay/ending.test.ts',
      'src/xds/relay/stats.test.ts',
      'src/xds/relay/http2-ads-stream.test.ts',
    ],
  },
};
