// Startup latency: exec of `pilot-agent proxy` → Envoy spawned, and → Envoy
// LIVE with its first xDS listener. Baseline, same run: the same Envoy and
// bootstrap started directly, without the agent. Median of N runs (default 5).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { startAgent } from '../test/support/agent.ts';
import { envoyBin } from '../test/support/paths.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';

const runs = Number(process.env.RUNS ?? 5);
const upstream = await startUpstream('ok');
const listenerPort = await freePort();
const peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }));

/** Polls admin until Envoy is LIVE and has a dynamic listener; returns the elapsed ms. */
async function untilLiveWithListener(adminPort: number, start: number): Promise<number> {
  for (;;) {
    const info = (await fetch(`http://127.0.0.1:${adminPort}/listeners?format=json`)
      .then((r) => r.json())
      .catch(() => undefined)) as { listener_statuses?: { name: string }[] } | undefined;
    if (info?.listener_statuses?.some((listener) => listener.name === 'listener_0')) {
      const state = await fetch(`http://127.0.0.1:${adminPort}/ready`).then((r) => r.status).catch(() => 0);
      if (state === 200) return performance.now() - start;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function viaAgent(): Promise<{ spawned: number; live: number }> {
  const start = performance.now();
  const agent = await startAgent({ discoveryAddress: peer.address });
  await agent.log.waitFor((entry) => entry.msg === 'envoy started', 30_000);
  const spawned = performance.now() - start;
  const live = await untilLiveWithListener(agent.adminPort, start);
  await agent.stop();
  return { spawned, live };
}

async function direct(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-direct-'));
  const adminPort = await freePort();
  const printed = await execa(process.execPath, [
    'bin/pilot-agent.js',
    'proxy',
    'sidecar',
    '--serviceregistry',
    'Other',
    '--ip',
    '127.0.0.1',
    '--discoveryAddress',
    peer.address,
    '--proxyAdminPort',
    String(adminPort),
    '--prometheusPort',
    '0',
    '--configPath',
    dir,
    '--print-bootstrap',
  ]);
  const file = join(dir, 'bootstrap.json');
  await writeFile(file, printed.stdout);
  const start = performance.now();
  const envoy = execa(envoyBin, ['-c', file, '--disable-hot-restart', '-l', 'error'], { reject: false });
  const live = await untilLiveWithListener(adminPort, start);
  envoy.kill('SIGTERM');
  await envoy;
  await rm(dir, { recursive: true, force: true });
  return live;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const agentRuns: { spawned: number; live: number }[] = [];
const directRuns: number[] = [];
for (let i = 0; i < runs; i++) {
  agentRuns.push(await viaAgent());
  directRuns.push(await direct());
}
await peer.stop();
await upstream.close();

const spawned = median(agentRuns.map((run) => run.spawned));
const live = median(agentRuns.map((run) => run.live));
const baseline = median(directRuns);
console.log(
  JSON.stringify(
    {
      runs,
      agentExecToEnvoySpawnedMs: Math.round(spawned),
      agentExecToLiveWithListenerMs: Math.round(live),
      directEnvoyToLiveWithListenerMs: Math.round(baseline),
      ratioAgentVsDirect: Number((live / baseline).toFixed(2)),
      addedByAgentMs: Math.round(live - baseline),
    },
    null,
    2,
  ),
);
