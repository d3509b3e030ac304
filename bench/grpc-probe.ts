// The gRPC app probe's cost: an agent with one `grpc` probe in
// ISTIO_KUBE_APP_PROBERS is asked /app-health/<c>/livez --rate times a second
// for --seconds (as a busy kubelet would never ask, to make a per-probe cost or
// a leak show), beside a previous build (a git ref, default main) in the same
// run. Reports the probe's latency (median, p99) and the agent's RSS and
// anonymous RSS afterwards, as ratios; medians of --runs, builds alternating.
// Run: .tools/bin/node bench/grpc-probe.ts [--seconds 30] [--rate 10] [--runs 2] [--baseline main]
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgent } from '../test/support/agent.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { startGrpcApp } from '../test/support/probe-apps.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { buildRef, currentBuild, type Build } from './cost-build.ts';
import { memory } from './cost-proc.ts';

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    rate: { type: 'string', default: '10' },
    runs: { type: 'string', default: '2' },
    baseline: { type: 'string', default: 'main' },
  },
});
const seconds = Number(flags.seconds);
const rate = Number(flags.rate);

interface Sample { medianMs: number; p99Ms: number; failed: number; rssMb: number; rssAnonMb: number }

async function probeOne(build: Build, discoveryAddress: string, appPort: number): Promise<Sample> {
  const statusPort = await freePort();
  const probers = { '/app-health/app/livez': { grpc: { port: appPort, service: 'api' }, timeoutSeconds: 1 } };
  const agent = await startAgent({
    discoveryAddress,
    bin: build.bin,
    args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
    env: { ISTIO_KUBE_APP_PROBERS: JSON.stringify(probers) },
  });
  try {
    await agent.log.waitFor((entry) => entry.msg === 'epoch live', 30_000, 'epoch live');
    const latencies: number[] = [];
    let failed = 0;
    for (let i = 0; i < seconds * rate; i++) {
      const started = performance.now();
      const status = await fetch(`http://127.0.0.1:${statusPort}/app-health/app/livez`).then((r) => r.status).catch(() => 0);
      latencies.push(performance.now() - started);
      if (status !== 200) failed++;
      await sleep(Math.max(0, 1000 / rate - (performance.now() - started)));
    }
    await sleep(2000); // let the last channels close
    latencies.sort((a, b) => a - b);
    return { medianMs: latencies[Math.floor(latencies.length / 2)]!, p99Ms: latencies[Math.floor(latencies.length * 0.99)]!, failed, ...memory(agent.pid) };
  } finally {
    await agent.stop();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const upstream = await startUpstream('ok');
const peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port }));
const app = await startGrpcApp('127.0.0.1');
const builds = [currentBuild(), await buildRef(flags.baseline)];
const samples: Sample[][] = builds.map(() => []);
try {
  for (let run = 0; run < Number(flags.runs); run++) {
    for (const i of run % 2 ? [1, 0] : [0, 1]) samples[i]!.push(await probeOne(builds[i]!, peer.address, app.port));
  }
} finally {
  await app.close();
  await peer.stop();
  await upstream.close();
  for (const build of builds) await build.remove();
}

const keys = ['medianMs', 'p99Ms', 'failed', 'rssMb', 'rssAnonMb'] as const;
const table = Object.fromEntries(keys.map((key) => {
  const [current, previous] = samples.map((s) => median(s.map((x) => x[key])));
  return [
    key,
    {
      [builds[0]!.label]: Number(current!.toFixed(2)),
      [builds[1]!.label]: Number(previous!.toFixed(2)),
      vsPrevious: previous ? Number((current! / previous).toFixed(2)) : null,
    },
  ];
}));
console.log(JSON.stringify({ runs: Number(flags.runs), probes: seconds * rate, table }, null, 2));
