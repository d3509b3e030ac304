// A node full of pods and one discovery server (test/support/pods.ts): N pods
// exec'd at once (a rollout), then steady state, then the discovery server
// killed and started again after each outage (a restart storm) while every
// pod serves requests through its capture. Run for this checkout and for
// the previous build (a git ref, default main), one after the other, each
// on a fresh mesh, so the figures read as ratios.
// Several baselines: repeat --baseline. --outages none: rollout and steady
// state only; --rounds N: N rollouts per build, alternating, medians kept.
// --istio-agent PATH: Istio's own pilot-agent as one more build (bench/istio-agent.ts
// says how to build it); its reconnects are read from its log, it counts no dials.
// Steady state counts what a node pays per pod: PSS, USS and page tables of
// each agent and of each whole pod (agent + Envoy), means over the N pods.
// Builds run through their shebang, as the image starts them; --variant
// 'LABEL: --flag NAME=VALUE' adds this checkout under other Node flags.
// Run: .tools/bin/node bench/fleet.ts [--pods 10] [--outages 10,60|none] [--baseline main ...] [--variant SPEC ...] [--rounds 1] [--quick] [--istio-agent PATH]
import { Agent as HttpsAgent } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  makePodNamespace,
  podSkipReason,
  requestThroughCapture,
  startMesh,
  startPodAgent,
  untilPodReady,
  type Mesh,
  type Pod,
  type PodLogEntry,
} from '../test/support/pods.ts';
import { buildRef, currentBuild, variantBuild } from './cost-build.ts';
import { activity, memory, sumMemory } from './cost-proc.ts';
import { median, percentile, ratio, round } from './figures.ts';
import { istioBuild, istioConnected, logTimeMs, type Contender } from './istio-agent.ts';

const { values: flags } = parseArgs({
  options: {
    pods: { type: 'string', default: '10' },
    outages: { type: 'string', default: '10,60' },
    baseline: { type: 'string', multiple: true, default: ['main'] },
    variant: { type: 'string', multiple: true, default: [] },
    rounds: { type: 'string', default: '1' },
    quick: { type: 'boolean' },
    'istio-agent': { type: 'string' },
  },
});
const podCount = flags.quick ? 4 : Number(flags.pods);
const outagesS = (flags.quick ? '5' : flags.outages).split(',').filter((text) => text !== '' && text !== 'none').map(Number);
const rounds = Number(flags.rounds);
const ourConnected = (entry: PodLogEntry) => entry.msg === 'connected to the discovery server';

interface Rollout { readyP50Ms: number; readyP90Ms: number; readyMaxMs: number; allReadyMs: number; agentCpuSToReady: number; serverCpuS: number }
interface Steady {
  agentRssMb: number; agentAnonMb: number; envoyRssMb: number; envoyAnonMb: number;
  /** Means over the N pods, as a node pays them: the file-backed pages of one image are shared (PSS). */
  agentPssMb: number; agentUssMb: number; agentPageTablesMb: number; agentThreads: number; podPssMb: number; podUssMb: number; podPageTablesMb: number;
}
interface Storm {
  outageS: number;
  requests: number;
  failed: number;
  notReadyPolls: number;
  reconnectP50Ms: number;
  reconnectMaxMs: number;
  dialsPerAgent: number;
  handshakesPerAgent: number;
  most100msWindowShare: number;
}

const cpuS = (pid: number) => activity(pid).cpuNs / 1e9;

async function rollout(mesh: Mesh, build: Contender, namespaces: { name: string; ip: string }[]): Promise<{ pods: Pod[]; figures: Rollout }> {
  const serverBefore = cpuS(mesh.peer.pid) + cpuS(mesh.ca.pid);
  const start = performance.now();
  const { bin, foreign, viaShebang, nodeArgs, env } = build;
  const pods = await Promise.all(namespaces.map((netns, index) => startPodAgent(mesh, netns, index, { bin, foreign, viaShebang, nodeArgs, env })));
  const cpuAtReady: number[] = [];
  const ready = await Promise.all(pods.map(async (pod) => {
    const ms = await untilPodReady(pod, 120_000, 10);
    cpuAtReady.push(cpuS(pod.agentPid));
    return ms;
  }));
  const allReadyMs = performance.now() - start;
  return {
    pods,
    figures: {
      readyP50Ms: median(ready), readyP90Ms: percentile(ready, 90), readyMaxMs: Math.max(...ready), allReadyMs,
      agentCpuSToReady: median(cpuAtReady), serverCpuS: cpuS(mesh.peer.pid) + cpuS(mesh.ca.pid) - serverBefore,
    },
  };
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

function steady(pods: Pod[]): Steady {
  const agents = pods.map((pod) => memory(pod.agentPid));
  const envoys = pods.flatMap((pod) => pod.envoys()).map(memory);
  const whole = pods.map((pod) => sumMemory([pod.agentPid, ...pod.envoys()].map(memory)));
  return {
    agentRssMb: median(agents.map((m) => m.rssMb)), agentAnonMb: median(agents.map((m) => m.rssAnonMb)),
    envoyRssMb: median(envoys.map((m) => m.rssMb)), envoyAnonMb: median(envoys.map((m) => m.rssAnonMb)),
    agentPssMb: mean(agents.map((m) => m.pssMb)), agentUssMb: mean(agents.map((m) => m.ussMb)),
    agentPageTablesMb: mean(agents.map((m) => m.pageTablesMb)), agentThreads: median(agents.map((m) => m.threads)),
    podPssMb: mean(whole.map((m) => m.pssMb)), podUssMb: mean(whole.map((m) => m.ussMb)), podPageTablesMb: mean(whole.map((m) => m.pageTablesMb)),
  };
}

/** Sum of the agent's upstream dial counter, read from its merged metrics on 15020. */
async function dials(pod: Pod): Promise<number> {
  const text = await fetch(`http://${pod.ip}:15020/stats/prometheus`, { signal: AbortSignal.timeout(2000) }).then((r) => r.text(), () => '');
  return [...text.matchAll(/^\w*xds_proxy_upstream_dials_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** Requests through every pod's capture (2/s each) and readiness polls until stopped. */
function traffic(pods: Pod[]) {
  const counts = { requests: 0, failed: 0, notReadyPolls: 0 };
  let running = true;
  const loops = pods.map(async (pod) => {
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
    for (let tick = 0; running; tick++) {
      counts.requests++;
      if (!(await requestThroughCapture(pod, 2000, agent))) counts.failed++;
      if (tick % 2 === 0) {
        const status = await fetch(`http://${pod.ip}:15021/healthz/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);
        if (status !== 200) counts.notReadyPolls++;
      }
      await sleep(500);
    }
    agent.destroy();
  });
  return { counts, stop: async () => { running = false; await Promise.all(loops); } };
}

async function storm(mesh: Mesh, pods: Pod[], outageS: number, foreign: boolean): Promise<Storm> {
  const connected = foreign ? istioConnected : ourConnected;
  const load = traffic(pods);
  await sleep(2000);
  const dialsBefore = await Promise.all(pods.map(dials));
  await mesh.stopPeer();
  await sleep(outageS * 1000);
  const from = pods.map((pod) => pod.log.entries.length);
  const returnedAt = Date.now();
  await mesh.startPeerAgain();
  const reconnected = await Promise.all(pods.map(async (pod, i) => {
    const line = await pod.log.waitFor(connected, 120_000, `${pod.name} to reconnect`, from[i]);
    return logTimeMs(line) - returnedAt;
  }));
  await sleep(3000); // a second connection, if any, shows by now
  await load.stop();
  const dialsAfter = await Promise.all(pods.map(dials));
  const handshakes = pods.map((pod, i) => pod.log.entries.slice(from[i]).filter(connected).length);
  return {
    outageS, ...load.counts,
    reconnectP50Ms: median(reconnected), reconnectMaxMs: Math.max(...reconnected),
    dialsPerAgent: foreign ? Number.NaN : median(dialsAfter.map((after, i) => after - dialsBefore[i]!)),
    handshakesPerAgent: median(handshakes),
    most100msWindowShare: mostInWindow(reconnected, 100) / reconnected.length,
  };
}

/** The most events inside any window of `ms`. */
function mostInWindow(times: number[], ms: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  return Math.max(...sorted.map((start) => sorted.filter((at) => at >= start && at < start + ms).length));
}

async function scenario(build: Contender) {
  const mesh = await startMesh();
  const namespaces: { name: string; ip: string; remove(): Promise<void> }[] = [];
  let pods: Pod[] = [];
  try {
    for (let i = 0; i < podCount; i++) namespaces.push(await makePodNamespace(mesh, i));
    const started = await rollout(mesh, build, namespaces);
    pods = started.pods;
    await sleep(5000);
    const memoryFigures = steady(pods);
    const storms: Storm[] = [];
    for (const outage of outagesS) storms.push(await storm(mesh, pods, outage, build.foreign !== undefined));
    return { rollout: started.figures, steady: memoryFigures, storms };
  } finally {
    await Promise.all(pods.map((pod) => pod.stop()));
    for (const netns of namespaces) await netns.remove();
    await mesh.close();
  }
}

const skip = await podSkipReason();
if (skip) {
  console.log(JSON.stringify({ skipped: skip }));
  process.exit(0);
}
const builds: Contender[] = [currentBuild()];
for (const ref of flags.baseline) builds.push(await buildRef(ref));
for (const spec of flags.variant) builds.push(variantBuild(spec));
const istioBin = flags['istio-agent'];
if (istioBin) builds.push(istioBuild(istioBin));
type Result = Awaited<ReturnType<typeof scenario>>;
const perBuild: Result[][] = builds.map(() => []);
try {
  for (let round = 0; round < rounds; round++) {
    // Alternate, so neither build always runs on a warmer machine.
    const order = builds.map((_, index) => index);
    for (const index of round % 2 ? order.reverse() : order) perBuild[index]!.push(await scenario(builds[index]!));
  }
} finally {
  for (const build of builds) await build.remove();
}
/** Each figure's median over the rounds (storms: the first round's). */
const medianOf = <T extends object>(list: T[]): T =>
  Object.fromEntries(Object.keys(list[0]!).map((key) => [key, median(list.map((item) => (item as Record<string, number>)[key]!))])) as T;
const results = perBuild.map((list) => ({
  rollout: medianOf(list.map((r) => r.rollout)),
  steady: medianOf(list.map((r) => r.steady)),
  storms: list[0]!.storms,
}));
const [now, ...before] = results;
const rounded = (figures: object) => Object.fromEntries(Object.entries(figures).map(([key, value]) => [key, typeof value === 'number' ? round(value) : value]));
const ratios = (a: object, b: object) =>
  Object.fromEntries(
    Object.entries(a)
      .filter(([key]) => key !== 'outageS')
      .map(([key, value]) => [key, ratio(value as number, (b as Record<string, number>)[key]!)]),
  );
const shown = (result: Result) => ({ rollout: rounded(result.rollout), steady: rounded(result.steady), storms: result.storms.map(rounded) });
console.log(JSON.stringify({
  pods: podCount,
  rounds,
  ...Object.fromEntries(results.map((result, index) => [builds[index]!.label, shown(result)])),
  ...Object.fromEntries(before.map((then, index) => [`vs ${builds[index + 1]!.label}`, {
    rollout: ratios(now!.rollout, then.rollout), steady: ratios(now!.steady, then.steady),
    storms: now!.storms.map((storm, i) => ({ outageS: storm.outageS, ...(then.storms[i] ? ratios(storm, then.storms[i]) : {}) })),
  }])),
}, null, 2));
