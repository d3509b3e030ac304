/**
 * What stuck scrapes cost the probe path (issue 44): an agent with the real
 * Envoy (40 clusters' stats included, ~0.5 MB of text), `--readers` pod-network
 * connections in a network namespace with a tiny receive window each ask for
 * /stats/prometheus and never read; meanwhile a prober in the same namespace
 * sends GET /healthz/ready every 200 ms (a new connection each, 5 s timeout)
 * for 12 s, and a well-behaved scraper (the host's end of the namespace's
 * link: another pod-network peer) scrapes once a second.
 * Reports the probes' median, p90 and worst latency, how many took over 1 s
 * (the kubelet's timeout) or failed, and the scraper's statuses; the same
 * figures with no attack first. This checkout against `--baseline` (default
 * main; `none`: this checkout alone) built in a temp worktree, in the same run, builds alternating.
 * Run beside /tmp/hogs.sh for the loaded figures.
 *
 * Run (root): .tools/bin/node bench/scrape-flood.ts [--readers 200] [--rounds 2] [--baseline main|none] [--agent LABEL=PATH] [--prof DIR]
 */
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { startAgent } from '../test/support/agent.ts';
import { makeNetns, type Netns } from '../test/support/netns.ts';
import { nodeBin } from '../test/support/paths.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { edsCluster, endpoints, simpleHttpService } from '../test/support/resources.ts';
import { waitForStatus } from '../test/support/status-agent.ts';
import { http } from '../src/shared/node-http.ts';
import { buildRef, currentBuild, type Build } from './cost-build.ts';

const options = {
  readers: { type: 'string', default: '200' },
  rounds: { type: 'string', default: '2' },
  baseline: { type: 'string', default: 'main' },
  /** A directory for a CPU profile of this checkout's agent (no baseline then). */
  prof: { type: 'string' },
  /** Another build's entry point, LABEL=PATH (e.g. a variant of the limits), measured beside these. */
  agent: { type: 'string', multiple: true, default: [] as string[] },
} as const;
const { values } = parseArgs({ options });

const stuckReaders = `
import { connect } from 'node:net';
const [host, port, count] = process.argv.slice(1);
const open = () => new Promise((resolve) => {
  const socket = connect({ port: Number(port), host }, () => {
    socket.pause();
    socket.write('GET /stats/prometheus HTTP/1.1\\r\\nHost: pod\\r\\n\\r\\n');
    resolve();
  });
  socket.on('error', () => resolve());
});
for (let i = 0; i < Number(count); i += 20) await Promise.all(Array.from({ length: 20 }, open));
setInterval(() => {}, 1000);
`;

/** Probes every 200 ms for 12 s; prints [{ms, status}]. */
const prober = `
import { connect } from 'node:net';
const [host, port] = process.argv.slice(1);
const probe = () => new Promise((resolve) => {
  let text = '';
  const started = Date.now();
  const socket = connect(Number(port), host);
  socket.setTimeout(5000, () => socket.destroy());
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => {});
  socket.on('close', () => resolve({ ms: Date.now() - started, status: Number(/^HTTP\\/1\\.[01] (\\d{3})/.exec(text)?.[1] ?? 0) }));
  socket.write('GET /healthz/ready HTTP/1.1\\r\\nHost: pod\\r\\nConnection: close\\r\\n\\r\\n');
});
const results = [];
const end = Date.now() + 12000;
const pending = [];
while (Date.now() < end) {
  pending.push(probe().then((r) => results.push(r)));
  await new Promise((resolve) => setTimeout(resolve, 200));
}
await Promise.all(pending);
process.stdout.write(JSON.stringify(results));
`;

interface Figures { median: number; p90: number; worst: number; over1s: number; failed: number; probes: number; scrapes: string }

/** A well-behaved scraper from another address of the pod network: one scrape at a time, once a second, until stopped; the statuses it got. */
function scraper(host: string, port: number): { stop(): Promise<string> } {
  const statuses: number[] = [];
  let running = true;
  const one = () => new Promise<void>((resolve) => {
    const request = http.get({ host, port, path: '/stats/prometheus', agent: false, timeout: 10_000 }, (response) => {
      response.resume();
      response.on('end', () => (statuses.push(response.statusCode ?? 0), resolve()));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => (statuses.push(0), resolve()));
  });
  const loop = (async () => {
    while (running) await Promise.all([one(), new Promise((resolve) => setTimeout(resolve, 1000))]);
  })();
  return { stop: async () => ((running = false), await loop, summarise(statuses)) };
}

const summarise = (statuses: number[]) => [...new Set(statuses)].map((s) => `${s}×${statuses.filter((t) => t === s).length}`).join(' ');

async function probeRound(netns: Netns, port: number, attack: boolean): Promise<Figures> {
  const readers = attack ? execa('ip', ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', stuckReaders, netns.hostIp, String(port), values.readers], { reject: false }) : undefined;
  try {
    const scraping = scraper(netns.hostIp, port);
    const { stdout } = await execa('ip', ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', prober, netns.hostIp, String(port)]);
    const scrapes = await scraping.stop();
    const probes = JSON.parse(stdout) as { ms: number; status: number }[];
    const ms = probes.map((p) => p.ms).sort((a, b) => a - b);
    const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
    return { median: at(0.5), p90: at(0.9), worst: ms.at(-1)!, over1s: ms.filter((m) => m > 1000).length, failed: probes.filter((p) => p.status !== 200).length, probes: ms.length, scrapes };
  } finally {
    readers?.kill('SIGKILL');
    await readers;
  }
}

async function measure(build: Build, discovery: string, netns: Netns): Promise<{ label: string; quiet: Figures; attacked: Figures }> {
  const statusPort = await freePort();
  const agent = await startAgent({
    discoveryAddress: discovery, bin: build.bin, viaShebang: build.viaShebang, nodeArgs: build.nodeArgs,
    args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
    env: { ISTIO_METAJSON_ANNOTATIONS: JSON.stringify({ 'sidecar.istio.io/statsInclusionPrefixes': 'cluster.bulk_' }) },
  });
  try {
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    const quiet = await probeRound(netns, statusPort, false);
    const attacked = await probeRound(netns, statusPort, true);
    return { label: build.label, quiet, attacked };
  } finally {
    await agent.stop();
  }
}

const show = (f: Figures) => `median ${f.median} ms, p90 ${f.p90}, worst ${f.worst}, >1 s ${f.over1s}/${f.probes}, failed ${f.failed}; scraper ${f.scrapes}`;

async function main(): Promise<void> {
  const upstreamPort = await freePort();
  const bulk = Array.from({ length: 40 }, (_, i) => [edsCluster(`bulk_${i}`), endpoints(`bulk_${i}`, upstreamPort)]).flat();
  const peer = await startPeer([...simpleHttpService({ listenerPort: await freePort(), upstreamPort }), ...bulk]);
  const netns = await makeNetns('flood');
  const profiled = { ...currentBuild(), viaShebang: false, nodeArgs: ['--disable-sigusr1', '--max-semi-space-size=1', '--cpu-prof', `--cpu-prof-dir=${values.prof}`] };
  const others = values.agent.map((spec) => ({ label: spec.slice(0, spec.indexOf('=')), bin: spec.slice(spec.indexOf('=') + 1), viaShebang: true, remove: async () => {} }));
  const builds = values.prof ? [profiled] : [currentBuild(), ...others, ...(values.baseline === 'none' ? [] : [await buildRef(values.baseline)])];
  try {
    await execa('ip', ['netns', 'exec', netns.name, 'sysctl', '-qw', 'net.ipv4.tcp_rmem=4096 4096 4096']);
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const build of builds) {
        const result = await measure(build, peer.address, netns);
        console.log(`${result.label}, round ${round + 1}\n  quiet:    ${show(result.quiet)}\n  attacked: ${show(result.attacked)}`);
      }
    }
  } finally {
    for (const build of builds) await build.remove();
    await netns.remove();
    await peer.stop();
  }
}

await main();
