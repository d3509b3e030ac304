// The agent's own cost for `proxy sidecar` with one real Envoy connected to
// the go-control-plane peer (a small config), idle: RSS, anonymous RSS, idle
// CPU and wake-ups over a window, and exec → /healthz/ready 200. Beside it,
// in the same run: a bare `node` process (exec → an HTTP 200, then idle) and
// the previous build (a git ref, default main) so a change reads as a ratio.
// Each run starts all three in turn, then samples them over the same window.
// Medians of --runs (default 3); CPU and latency are noisy on a shared machine.
// Run: .tools/bin/node bench/cost.ts [--window 60] [--runs 3] [--baseline main]
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { startAgent } from '../test/support/agent.ts';
import { nodeBin } from '../test/support/paths.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { buildRef, currentBuild, type Build } from './cost-build.ts';
import { activity, idleRates, memory } from './cost-proc.ts';

const { values: flags } = parseArgs({ options: { window: { type: 'string', default: '60' }, runs: { type: 'string', default: '3' }, baseline: { type: 'string', default: 'main' }, quick: { type: 'boolean' } } });
const windowS = flags.quick ? 10 : Number(flags.window);
const runs = flags.quick ? 1 : Number(flags.runs);

interface Subject { pid: number; readyMs: number; stop(): Promise<unknown> }
interface Sample { readyMs: number; rssMb: number; rssAnonMb: number; idleMcpu: number; wakeupsPerS: number }

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
  const running = await startAgent({ discoveryAddress, bin: build.bin, args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())] });
  let exit: string | undefined;
  // `exited` rejects once the agent has run 60 s (test/support's exit deadline): here that only means still running.
  void running.exited.then((result) => (exit = `${build.label}: the agent exited (${JSON.stringify(result)}): ${running.stderr()}`), () => undefined);
  const readyMs = await untilReady(statusPort, start, () => exit ?? (performance.now() - start > 30_000 ? `${build.label}: not ready in 30 s` : undefined));
  return { pid: running.pid, readyMs, stop: () => running.stop() };
}

/** The floor: node itself, exec → an HTTP server answering 200. */
async function bareNode(): Promise<Subject> {
  const port = await freePort();
  const start = performance.now();
  const child = execa(nodeBin, ['-e', `require('node:http').createServer((q, s) => s.end()).listen(${port}, '127.0.0.1')`], { reject: false });
  const readyMs = await untilReady(port, start, () => (child.exitCode !== null ? `bare node exited: ${child.exitCode}` : undefined));
  return { pid: child.pid!, readyMs, stop: async () => { child.kill(); await child; } };
}

async function oneRun(subjects: (() => Promise<Subject>)[]): Promise<Sample[]> {
  const started: Subject[] = [];
  try {
    for (const make of subjects) started.push(await make());
    await sleep(3000); // settle: first scrapes, GC after startup
    const before = started.map((s) => activity(s.pid));
    await sleep(windowS * 1000);
    const after = started.map((s) => activity(s.pid));
    return started.map((s, i) => ({ readyMs: s.readyMs, ...memory(s.pid), ...idleRates(before[i]!, after[i]!, windowS) }));
  } finally {
    for (const s of started) await s.stop();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]) => `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;

const upstream = await startUpstream('ok');
const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
const builds = [currentBuild(), await buildRef(flags.baseline)];
const labels = [...builds.map((b) => b.label), 'bare node'];
const samples: Sample[][] = labels.map(() => []);
try {
  for (let run = 0; run < runs; run++) {
    // Alternate the order so neither build always starts on a warmer machine.
    const order = run % 2 ? [1, 0] : [0, 1];
    const result = await oneRun([...order.map((i) => () => agent(builds[i]!, peer.address)), bareNode]);
    order.forEach((buildIndex, position) => samples[buildIndex]!.push(result[position]!));
    samples[2]!.push(result[2]!);
  }
} finally {
  await peer.stop();
  await upstream.close();
  for (const build of builds) await build.remove();
}

const keys = ['rssMb', 'rssAnonMb', 'idleMcpu', 'wakeupsPerS', 'readyMs'] as const;
const table = Object.fromEntries(keys.map((key) => {
  const [current, previous, bare] = samples.map((s) => median(s.map((x) => x[key])));
  return [key, { [labels[0]!]: round(current!), [labels[1]!]: round(previous!), 'bare node': round(bare!), vsPrevious: ratio(current!, previous!), vsBareNode: ratio(current!, bare!), spreadCurrent: spread(samples[0]!.map((x) => x[key])), spreadPrevious: spread(samples[1]!.map((x) => x[key])) }];
}));
console.log(JSON.stringify({ runs, windowS, table }, null, 2));

function round(value: number) { return Number(value.toFixed(value < 10 ? 2 : 1)); }
function ratio(a: number, b: number) { return b === 0 ? null : Number((a / b).toFixed(2)); }
