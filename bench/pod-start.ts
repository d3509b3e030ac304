// A pod's start, as today's Istio sets a pod up: a network namespace with the
// agent's own capture, the agent as uid 1337 with the injection template's
// env, its certificate from the CA peer, the discovery peer with TLS and a
// required token (test/support/pods.ts). Measured from the agent's exec to
// readiness 200 on 15021 over the pod network, and to the first request
// through the capture; then phase by phase from the agent's own log.
// Beside it, in the same run and alternating: the previous build (a git ref,
// default main; repeat --baseline for several), so a change reads as a ratio.
// Also the agent's own CPU from exec to ready (/proc, Envoy excluded), and
// a second after the first request the agent's and Envoy's RSS, and the
// agent's and the whole pod's (agent + Envoy) anonymous RSS, PSS, USS, page
// tables and threads (bench/cost-proc.ts). Builds run through their shebang,
// as the image starts them; --variant 'LABEL: --flag NAME=VALUE' adds this
// checkout under other Node flags (bench/cost-build.ts).
// --istio-agent PATH: Istio's own pilot-agent as one more build in the same
// loop, phase by phase from its own log (bench/istio-agent.ts says how to
// build it). Medians of --runs (default 5).
// Run: .tools/bin/node bench/pod-start.ts [--runs 5] [--baseline main ...] [--variant SPEC ...] [--env NAME=VALUE ...] [--istio-agent PATH]
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { makePodNamespace, podSkipReason, requestThroughCapture, startMesh, startPodAgent, untilPodReady, type Pod } from '../test/support/pods.ts';
import { buildRef, currentBuild, variantBuild } from './cost-build.ts';
import { activity, memory, sumMemory, type Memory } from './cost-proc.ts';
import { istioBuild, istioPhaseTimes, type Contender } from './istio-agent.ts';
import { median, ratio, round } from './figures.ts';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    baseline: { type: 'string', multiple: true, default: ['main'] },
    variant: { type: 'string', multiple: true, default: [] },
    quick: { type: 'boolean' },
    env: { type: 'string', multiple: true, default: [] },
    'istio-agent': { type: 'string' },
  },
});
const runs = flags.quick ? 1 : Number(flags.runs);
/** --env NAME=VALUE (repeatable): over the template's env in both builds' pods, e.g. ECC_SIGNATURE_ALGORITHM=ECDSA. */
const podEnv = Object.fromEntries(flags.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));

/** Log lines that close each phase, in the order a start goes through them. */
export const phases = [
  ['first log line', () => true],
  ['CA asked', (msg: string) => msg === 'asking the CA for the workload certificate'],
  ['epoch 0 started', (msg: string) => msg === 'starting epoch'],
  ['certificate issued', (msg: string) => msg === 'workload certificate issued by the CA'],
  ['Envoy spawned', (msg: string) => msg === 'envoy started'],
  ["Envoy's xDS stream open", (msg: string) => msg === 'Envoy opened an xDS stream'],
  ['upstream connected', (msg: string) => msg === 'connected to the discovery server'],
  ['SDS pushed', (msg: string) => msg === 'pushed secrets'],
  ['epoch live', (msg: string) => msg === 'epoch live'],
] as const;

/** ms from exec to the first log line matching each phase. */
export function phaseTimes(pod: Pod): Record<string, number | undefined> {
  return Object.fromEntries(phases.map(([name, match]) => {
    const entry = pod.log.entries.find((line) => match(line.msg));
    return [name, entry ? entry.time - pod.execWallMs : undefined];
  }));
}

interface Sample {
  readyMs: number;
  agentCpuMsToReady: number;
  firstRequestMs: number;
  requestTries: number;
  agentRssMb: number;
  envoyRssMb: number;
  agent: Memory;
  pod: Memory;
  phases: Record<string, number | undefined>;
}

async function onePod(build: Contender, mesh: Awaited<ReturnType<typeof startMesh>>, netns: { name: string; ip: string }): Promise<Sample> {
  const pod = await startPodAgent(mesh, netns, 0, {
    bin: build.bin,
    env: { ...podEnv, ...build.env },
    foreign: build.foreign,
    viaShebang: build.viaShebang,
    nodeArgs: build.nodeArgs,
  });
  try {
    const readyMs = await untilPodReady(pod, 30_000, 5);
    const agentCpuMsToReady = activity(pod.agentPid).cpuNs / 1e6;
    let requestTries = 1;
    for (; !(await requestThroughCapture(pod, 1000)); requestTries++) {
      if (performance.now() - pod.execAt > 30_000) throw new Error(`${build.label}: no request through the capture in 30 s`);
    }
    const firstRequestMs = performance.now() - pod.execAt;
    if (!build.foreign) await pod.log.waitFor((entry) => entry.msg === 'epoch live', 10_000, 'epoch live').catch(() => undefined);
    await sleep(1000);
    const envoy = pod.envoys()[0];
    const rss = { agentRssMb: memory(pod.agentPid).rssMb, envoyRssMb: envoy ? memory(envoy).rssMb : Number.NaN };
    const sizes = { agent: memory(pod.agentPid), pod: sumMemory([pod.agentPid, ...pod.envoys()].map(memory)) };
    return { readyMs, agentCpuMsToReady, firstRequestMs, requestTries, ...rss, ...sizes, phases: build.foreign ? istioPhaseTimes(pod) : phaseTimes(pod) };
  } finally {
    await pod.stop();
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
const samples: Sample[][] = builds.map(() => []);
const mesh = await startMesh();
try {
  const netns = await makePodNamespace(mesh, 0);
  try {
    for (let run = 0; run < runs; run++) {
      // Alternate, so neither build always starts on a warmer machine.
      const order = builds.map((_, index) => index);
      for (const index of run % 2 ? order.reverse() : order) samples[index]!.push(await onePod(builds[index]!, mesh, netns));
    }
  } finally {
    await netns.remove();
  }
} finally {
  await mesh.close();
  for (const build of builds) await build.remove();
}

const summary = (list: Sample[]) => ({
  execToReadyMs: round(median(list.map((s) => s.readyMs))),
  readyEachMs: list.map((s) => Math.round(s.readyMs)),
  agentCpuMsToReady: round(median(list.map((s) => s.agentCpuMsToReady))),
  execToFirstRequestMs: round(median(list.map((s) => s.firstRequestMs))),
  requestTriesEach: list.map((s) => s.requestTries),
  agentRssMb: round(median(list.map((s) => s.agentRssMb))),
  envoyRssMb: round(median(list.map((s) => s.envoyRssMb))),
  agent: memoryMedians(list.map((s) => s.agent)),
  pod: memoryMedians(list.map((s) => s.pod)),
  phasesMs: Object.fromEntries(Object.keys(list[0]!.phases).map((name) => [name, round(median(list.map((s) => s.phases[name] ?? Number.NaN)))])),
});
/** Each memory figure's median. */
function memoryMedians(list: Memory[]): Memory {
  return Object.fromEntries(Object.keys(list[0]!).map((key) => [key, round(median(list.map((m) => m[key as keyof Memory])))])) as unknown as Memory;
}
const [current, ...previous] = samples.map(summary);
console.log(JSON.stringify({
  runs,
  loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
  [builds[0]!.label]: current,
  ...Object.fromEntries(previous.map((figures, index) => [builds[index + 1]!.label, figures])),
  ...Object.fromEntries(previous.map((figures, index) => [`vs ${builds[index + 1]!.label}`, {
    ready: ratio(current!.execToReadyMs, figures!.execToReadyMs),
    agentCpuToReady: ratio(current!.agentCpuMsToReady, figures!.agentCpuMsToReady),
    firstRequest: ratio(current!.execToFirstRequestMs, figures!.execToFirstRequestMs),
    agentRss: ratio(current!.agentRssMb, figures!.agentRssMb),
    envoyRss: ratio(current!.envoyRssMb, figures!.envoyRssMb),
    agentAnon: ratio(current!.agent.rssAnonMb, figures!.agent.rssAnonMb),
    agentPss: ratio(current!.agent.pssMb, figures!.agent.pssMb),
    agentUss: ratio(current!.agent.ussMb, figures!.agent.ussMb),
    agentPageTables: ratio(current!.agent.pageTablesMb, figures!.agent.pageTablesMb),
    podPss: ratio(current!.pod.pssMb, figures!.pod.pssMb),
    podUss: ratio(current!.pod.ussMb, figures!.pod.ussMb),
  }])),
}, null, 2));
