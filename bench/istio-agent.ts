// Istio's own pilot-agent in a pod of test/support/pods.ts, beside ours, for
// issues 23 and 27 ("compare by hand with Istio's own agent in the same pod").
// Exploration only: nothing of Istio is committed and CI cannot build it.
// Build it from a checkout of istio/istio (the Go module proxy does not serve
// istio.io/istio itself, only its dependencies; about 8 min on 2 cores):
//   cd istio && nice -n 10 go build -o /work/istio-bin/pilot-agent ./pilot/cmd/pilot-agent
//   cp tools/packaging/common/envoy_bootstrap.json /work/istio-bin/
// then: .tools/bin/node bench/pod-start.ts --istio-agent /work/istio-bin/pilot-agent
// (the bootstrap template is looked for beside the binary).
//
// What it needs that our agent's pod does not give it as is:
// - its files at fixed paths under its cwd, not flags: the token at
//   ./var/run/secrets/tokens/istio-token, a writable
//   ./var/run/secrets/workload-spiffe-uds for its SDS socket, the template;
//   Envoy's binary comes from PROXY_CONFIG's binaryPath.
// - a CA certificate that names CA_ADDR's host: ISTIOD_SAN only stands in
//   for the CA's name when CA_ADDR is unset (the CA is then the discovery
//   server). The pod (test/support/pods.ts) names the peers
//   istiod.istio-system.svc through its hosts file, for both agents.
// - CLOUD_PLATFORM=none, set here (`--env CLOUD_PLATFORM=` brings the probe back).
// Also unlike ours: Istio's master uses delta xDS by default (ISTIO_DELTA_XDS
// true; ours false), so `--env ISTIO_DELTA_XDS=true` compares like with like.
import { existsSync } from 'node:fs';
import { chown, copyFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { envoyBin } from '../test/support/paths.ts';
import { proxyUid, type ForeignAgent, type Pod } from '../test/support/pods.ts';
import type { Build } from './cost-build.ts';

/** A build of ours, or another agent (Istio's) run in the same pods. */
export type Contender = Build & { foreign?: ForeignAgent };

/** --istio-agent PATH as one more build in a bench's loop. */
export const istioBuild = (path: string): Contender => ({ label: "Istio's agent", bin: path, foreign: istioAgent(path), remove: async () => {} });


/** Dirs under the pod's cwd that Istio's agent writes to. */
const writable = ['var/run/secrets/workload-spiffe-uds', 'var/run/secrets/tokens', 'var/lib/istio/envoy'];

export function istioAgent(path: string): ForeignAgent {
  const bin = resolve(path); // it runs with the pod's dir as its cwd
  const template = join(dirname(bin), 'envoy_bootstrap.json');
  if (!existsSync(bin)) throw new Error(`--istio-agent: ${bin} does not exist (build it as bench/istio-agent.ts says)`);
  if (!existsSync(template))
    throw new Error(`Istio's bootstrap template ${template} does not exist (copy tools/packaging/common/envoy_bootstrap.json beside the binary)`);
  return async ({ dir, env, mesh }) => {
    for (const path of writable) {
      await mkdir(join(dir, path), { recursive: true });
      for (let at = path; at !== '.'; at = dirname(at)) await chown(join(dir, at), proxyUid, proxyUid);
    }
    await copyFile(mesh.files.token, join(dir, 'var/run/secrets/tokens/istio-token'));
    await copyFile(template, join(dir, 'var/lib/istio/envoy/envoy_bootstrap_tmpl.json'));
    const proxyConfig = { ...JSON.parse(env.PROXY_CONFIG!), binaryPath: envoyBin };
    return {
      argv: [bin, 'proxy', 'sidecar', '--domain', 'default.svc.cluster.local', '--proxyLogLevel', 'warning', '--log_as_json',
        // Its xDS proxy logs Envoy's stream only at debug: for the phase "Envoy's xDS stream open".
        '--log_output_level', 'default:info,xdsproxy:debug'],
      // CLOUD_PLATFORM=none: ours probes no cloud; Istio's probes AWS, GCP and Azure metadata, which on
      // this network (169.254.169.254 dropped, as on many bare-metal nodes) costs it 2 s before it starts.
      env: { CLOUD_PLATFORM: 'none', ...env, PROXY_CONFIG: JSON.stringify(proxyConfig) },
    };
  };
}

type Entry = Pod['log']['entries'][number];

/** A log line's time in ms since the epoch: ours logs a number, Istio's an RFC 3339 string. */
export const logTimeMs = (entry: Entry) => (typeof entry.time === 'number' ? entry.time : Date.parse(String(entry.time)));
/** Istio's agent has opened a stream to the discovery server (once per stream Envoy opens to it). */
export const istioConnected = (entry: Entry) => /^connected to (delta )?upstream XDS server/.test(String(entry.msg));
const at = (entry: Entry | undefined, pod: Pod) => (entry ? logTimeMs(entry) - pod.execWallMs : undefined);
const line = (prefix: string) => (entries: Entry[], pod: Pod) => at(entries.find((entry) => String(entry.msg).startsWith(prefix)), pod);
/** Go's duration text ("142.881074ms", "1.2s") in ms. */
const durationMs = (text: unknown) => {
  const match = /^([\d.]+)(ms|s|µs)$/.exec(String(text));
  return match ? Number(match[1]) * ({ ms: 1, s: 1000, µs: 0.001 } as Record<string, number>)[match[2]!]! : Number.NaN;
};

/**
 * Phases of Istio's start, closed by its own log lines (its messages as of
 * Istio master, Aug 2026), in ms from exec. It does not log the CA call's
 * start: that is the issued line's time less the latency it reports.
 */
export const istioPhases: [string, (entries: Entry[], pod: Pod) => number | undefined][] = [
  ['first log line', (entries, pod) => at(entries[0], pod)],
  ['settings read', line('using credential fetcher')],
  ['SDS server started', line('Starting default Istio SDS Server')],
  ['Envoy spawned', line('Envoy command:')],
  ['upstream connected', (entries, pod) => at(entries.find(istioConnected), pod)],
  ['CA asked', (entries, pod) => {
    const issued = entries.find((entry) => String(entry.msg).startsWith('generated new workload certificate'));
    return issued ? at(issued, pod)! - durationMs(issued.latency) : undefined;
  }],
  ['certificate issued', line('generated new workload certificate')],
  ["Envoy's xDS stream open", line('accepted delta xds connection from envoy')],
  ["Envoy's SDS stream open", line('ADS: new connection for node')],
  ['SDS served', line('returned workload certificate from cache')],
  ['Envoy ready', line('Readiness succeeded')],
];

/** ms from exec to each of Istio's phases (its log's times are RFC 3339 strings). */
export function istioPhaseTimes(pod: Pod): Record<string, number | undefined> {
  return Object.fromEntries(istioPhases.map(([name, find]) => [name, find(pod.log.entries, pod)]));
}
