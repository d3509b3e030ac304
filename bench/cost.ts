// The agent's own cost for `proxy sidecar` with one real Envoy connected to
// the go-control-plane peer (a small config), idle: RSS, anonymous RSS, PSS,
// USS, page tables and threads (bench/cost-proc.ts), idle CPU and wake-ups
// over a window, exec → /healthz/ready 200 and the agent's CPU to ready; the
// same memory for the whole pod (agent + Envoy). Beside it, in the same run:
// a bare `node` process (exec → an HTTP 200, then idle), the previous build
// (a git ref, default main; repeatable) and --variant runs of this checkout
// under other Node flags (bench/cost-build.ts), so a change reads as a ratio
// against the first baseline. Builds run through their shebang, as the image
// starts them. Each run starts all in turn (the order rotating), then samples
// them over the same window. Medians of --runs (default 3), with min–max.
// Run: .tools/bin/node bench/cost.ts [--window 60] [--runs 3] [--baseline main ...] [--variant 'LABEL: --flag NAME=VALUE' ...]
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { startAgent } from '../test/support/agent.ts';
import { nodeBin } from '../test/support/paths.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { buildRef, currentBuild, variantBuild, type Build } from './cost-build.ts';
import { activity, idleRates, memory, sumMemory, type Memory } from './cost-proc.ts';
import { findEnvoys } from '../test/support/processes.ts';

const { values: flags } = parseArgs({
  options: {
    window: { type: 'string', default: '60' },
    runs: { type: 'string', default: '3' },
    baseline: { type: 'string', multiple: true, default: ['main'] },
    variant: { type: 'string', multiple: true, default: [] },
    quick: { type: 'boolean' },
  },
});
const windowS = flags.quick ? 10 : Number(flags.window);
const runs = flags.quick ? 1 : Number(flags.runs);

interface Subject { pid: number; readyMs: number; cpuMsToReady: number; envoys(): number[]; stop(): Promise<unknown> }
type Pod = { [K in keyof Memory as `pod${Capitalize<K>}`]: number };
type Sample = Memory & Pod & { readyMs: number; cpuMsToReady: number; idleMcpu: number; wakeupsPerS: number };

async function untilReady(port: number, start: number, failure: () => string | undefined): Promise<number> {
  for (;;) {
    const reason = failure();
    if (reason !== undefined) throw new Error(reason);
    const status = await fetch(`http://127.0.0.1:${port}/healthz/ready`).then((r) => r.status).catch(() => 0);
    if (status === 200) return performance.now() - start;
    await sleep(5);
  }
}

async function agent(build: Build, discoveryAddress: string): Promise<Subject> {
  const statusPort = await freePort();
  const start = performance.now();
  const { bin, viaShebang, nodeArgs, env } = build;
  const running = await startAgent({
    discoveryAddress,
    bin,
    viaShebang,
    nodeArgs,
    env,
    args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
  });
  let exit: string | undefined;
  // `exited` rejects once the agent has run 60 s (test/support's exit deadline): here that only means still running.
  void running.exited.then((result) => (exit = `${build.label}: the agent exited (${JSON.stringify(result)}): ${running.stderr()}`), () => undefined);
  const readyMs = await untilReady(statusPort, start, () => exit ?? (performance.now() - start > 30_000 ? `${build.label}: not ready in 30 s` : undefined));
  const cpuMsToReady = activity(running.pid).cpuNs / 1e6;
  return { pid: running.pid, readyMs, cpuMsToReady, envoys: () => findEnvoys({ parent: running.pid, marks: [] }), stop: () => running.stop() };
}

/** The floor: node itself, exec → an HTTP server answering 200. */
async function bareNode(): Promise<Subject> {
  const port = await freePort();
  const start = performance.now();
  const child = execa(nodeBin, ['-e', `require('node:http').createServer((q, s) => s.end()).listen(${port}, '127.0.0.1')`], { reject: false });
  const readyMs = await untilReady(port, start, () => (child.exitCode !== null ? `bare node exited: ${child.exitCode}` : undefined));
  return { pid: child.pid!, readyMs, cpuMsToReady: activity(child.pid!).cpuNs / 1e6, envoys: () => [], stop: async () => { child.kill(); await child; } };
}

/** The agent and its Envoys as one pod. */
function podMemory(subject: Subject): Pod {
  const sum = sumMemory([subject.pid, ...subject.envoys()].map(memory));
  return Object.fromEntries(Object.entries(sum).map(([key, value]) => [`pod${key[0]!.toUpperCase()}${key.slice(1)}`, value])) as Pod;
}

async function oneRun(subjects: (() => Promise<Subject>)[]): Promise<Sample[]> {
  const started: Subject[] = [];
  try {
    for (const make of subjects) started.push(await make());
    await sleep(3000); // settle: first scrapes, GC after startup
    const before = started.map((s) => activity(s.pid));
    await sleep(windowS * 1000);
    const after = started.map((s) => activity(s.pid));
    return started.map((s, i) => ({
      readyMs: s.readyMs,
      cpuMsToReady: s.cpuMsToReady,
      ...memory(s.pid),
      ...podMemory(s),
      ...idleRates(before[i]!, after[i]!, windowS),
    }));
  } finally {
    for (const s of started) await s.stop();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]) => `${round(Math.min(...values))}–${round(Math.max(...values))}`;

const upstream = await startUpstream('ok');
const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
const builds: Build[] = [currentBuild()];
for (const ref of flags.baseline) builds.push(await buildRef(ref));
for (const spec of flags.variant) builds.push(variantBuild(spec));
const labels = [...builds.map((b) => b.label), 'bare node'];
const samples: Sample[][] = labels.map(() => []);
try {
  for (let run = 0; run < runs; run++) {
    // Rotate the order so no build always starts on a warmer machine.
    const order = builds.map((_, i) => (i + run) % builds.length);
    const result = await oneRun([...order.map((i) => () => agent(builds[i]!, peer.address)), bareNode]);
    order.forEach((buildIndex, position) => samples[buildIndex]!.push(result[position]!));
    samples[builds.length]!.push(result[builds.length]!);
  }
} finally {
  await peer.stop();
  await upstream.close();
  for (const build of builds) await build.remove();
}

const keys = [
  'rssMb',
  'rssAnonMb',
  'pssMb',
  'ussMb',
  'pageTablesMb',
  'threads',
  'podPssMb',
  'podUssMb',
  'podRssMb',
  'idleMcpu',
  'wakeupsPerS',
  'readyMs',
  'cpuMsToReady',
] as const;
const base = labels[1]!;
const table = Object.fromEntries(keys.map((key) => {
  const medians = samples.map((s) => median(s.map((x) => x[key])));
  return [key, Object.fromEntries(labels.flatMap((label, i) => [
    [label, round(medians[i]!)],
    ...(i === 1 ? [] : [[`${label} vs ${base}`, ratio(medians[i]!, medians[1]!)]]),
    [`${label} spread`, spread(samples[i]!.map((x) => x[key]))],
  ]))];
}));
console.log(JSON.stringify({ runs, windowS, loadAverage: loadavg().map((l) => Number(l.toFixed(2))), table }, null, 2));

function round(value: number) { return Number(value.toFixed(value < 10 ? 2 : 1)); }
function ratio(a: number, b: number) { return b === 0 ? null : Number((a / b).toFixed(3)); }
