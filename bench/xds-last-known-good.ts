// Last-known-good xDS: how soon a restarted Envoy serves its dynamic listener
// when the discovery server is down (served from the kept config) vs when it
// is up (the baseline, same run, same agent), for an Envoy kill -9 and for an
// agent SIGKILL + restart on the same --configPath; then the kept file's size
// and write cost at 3000 services, vs writing the same bytes as one plain
// file (the baseline). SotW and Delta. Median of RUNS (default 5).
// Run: .tools/bin/node bench/xds-last-known-good.ts
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../src/shared/clock.ts';
import { silentLogger } from '../src/shared/log.ts';
import { encodeLastKnownGood } from '../src/xds/last-known-good/codec.ts';
import { LastKnownGoodConfig } from '../src/xds/last-known-good/config.ts';
import { LastKnownGoodFile } from '../src/xds/last-known-good/file.ts';
import { assertGone, startAgent, type RunningAgent } from '../test/support/agent.ts';
import { startPeer, type Peer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { meshResources } from './mesh-resources.ts';

const runs = Number(process.env.RUNS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const upstream = await startUpstream('ok');
const listenerPort = await freePort();
const peerAddress = `127.0.0.1:${await freePort()}`;
const resources = (services: number) => meshResources({ services, listenerPort, upstreamPort: upstream.port });

/** ms from the agent's "envoy started" line (the nth) to the first 200 through the dynamic listener. */
async function toFirstRequest(agent: RunningAgent, nth: number): Promise<number> {
  const started = await agent.log
    .waitFor(() => agent.envoyPids().length > nth, 30_000, `Envoy start #${nth + 1}`)
    .then(() => agent.log.entries.filter((entry) => entry.msg === 'envoy started')[nth]!);
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${listenerPort}/`).then((response) => response.status === 200, () => false);
    if (ok) return Date.now() - Number(started.time);
    await sleep(2);
  }
}

/** The peer stopped (outage) or running (baseline) while `restart` runs. */
async function withPeer<T>(peerUp: boolean, state: { peer?: Peer }, restart: () => Promise<T>): Promise<T> {
  if (peerUp && !state.peer) state.peer = await startPeer(resources(1), { address: peerAddress });
  if (!peerUp && state.peer) (await state.peer.stop(), (state.peer = undefined));
  return restart();
}

type Mode = 'sotw' | 'delta';
const modeArgs = (mode: Mode) => (mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false']);

async function envoyKills(mode: Mode): Promise<{ outage: number[]; baseline: number[] }> {
  const state: { peer?: Peer } = {};
  const result = { outage: [] as number[], baseline: [] as number[] };
  await withPeer(true, state, async () => undefined);
  const agent = await startAgent({ discoveryAddress: peerAddress, args: ['--retryBudget', '100', '--retryInitialDelay', '10ms', ...modeArgs(mode)] });
  try {
    await toFirstRequest(agent, 0);
    for (let i = 0; i < runs * 2; i++) {
      const outage = i % 2 === 1;
      const pids = agent.envoyPids();
      const ms = await withPeer(!outage, state, async () => (process.kill(pids.at(-1)!, 'SIGKILL'), toFirstRequest(agent, pids.length)));
      result[outage ? 'outage' : 'baseline'].push(ms);
    }
  } finally {
    await agent.stop();
    await state.peer?.stop();
    await assertGone(agent.envoyPids());
  }
  return result;
}

async function agentRestarts(mode: Mode): Promise<{ outage: number[]; baseline: number[] }> {
  const state: { peer?: Peer } = {};
  const dir = await mkdtemp(join(tmpdir(), 'bench-lkg-'));
  const result = { outage: [] as number[], baseline: [] as number[] };
  try {
    await withPeer(true, state, async () => undefined);
    let agent = await startAgent({ discoveryAddress: peerAddress, dir, args: modeArgs(mode) });
    await toFirstRequest(agent, 0);
    await waitForFile(join(dir, 'config', 'last-known-good.json'), 1);
    for (let i = 0; i < runs * 2; i++) {
      const outage = i % 2 === 1;
      await agent.stop('SIGKILL');
      await assertGone(agent.envoyPids(), 15_000);
      agent = await withPeer(!outage, state, () => startAgent({ discoveryAddress: peerAddress, dir, args: modeArgs(mode) }));
      result[outage ? 'outage' : 'baseline'].push(await toFirstRequest(agent, 0));
    }
    await agent.stop();
    await assertGone(agent.envoyPids());
  } finally {
    await state.peer?.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return result;
}

/** The real agent and Envoy take 3000 services from the peer; then the file it wrote is measured. */
async function lastKnownGoodAtScale(services: number, mode: Mode): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-lkg-scale-'));
  const peer = await startPeer(resources(services), { address: peerAddress });
  const agent = await startAgent({ discoveryAddress: peerAddress, dir, args: modeArgs(mode) });
  const path = join(dir, 'config', 'last-known-good.json');
  try {
    await toFirstRequest(agent, 0);
    await waitForFile(path, services);
    const text = await readFile(path, 'utf8');
    const lastKnownGood = new LastKnownGoodConfig();
    const file = new LastKnownGoodFile({ configPath: join(dir, 'bench'), node: String(JSON.parse(text).node), clock: systemClock, logger: silentLogger });
    await mkdir(join(dir, 'bench'));
    await writeFile(file.path, text);
    await file.load(lastKnownGood);
    file.follow(lastKnownGood);
    const encode = timed(() => encodeLastKnownGood(lastKnownGood, 'node', Date.now()));
    const write = await timedAsync(() => file.flush());
    const plain = await timedAsync(() => writeFile(join(dir, 'bench', 'plain'), text));
    const summary = lastKnownGood.summary()[JSON.parse(text).types[0].mode as 'sotw' | 'delta'];
    const protobuf = Object.values(summary).reduce((sum, type) => sum + type.bytes, 0);
    console.log(
      `${mode}: kept config at ${services} services: file ${(text.length / 1e6).toFixed(1)} MB (${(protobuf / 1e6).toFixed(1)} MB of protobuf, base64 in JSON), ${((await stat(path)).size / services / 1000).toFixed(2)} kB per service`,
    );
    console.log(
      `${mode}: write cost: encode ${encode.toFixed(1)} ms + whole write (encode, write, fsync, rename) ${write.toFixed(1)} ms; baseline plain writeFile of the same bytes ${plain.toFixed(1)} ms (${(write / plain).toFixed(1)}×); written a second after a change, at most every 10 s`,
    );
  } finally {
    await agent.stop();
    await peer.stop();
    await assertGone(agent.envoyPids());
    await rm(dir, { recursive: true, force: true });
  }
}

function timed(work: () => unknown): number {
  const samples = Array.from({ length: runs }, () => {
    const start = performance.now();
    work();
    return performance.now() - start;
  });
  return median(samples);
}

async function timedAsync(work: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await work();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

async function waitForFile(path: string, services: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const text = await readFile(path, 'utf8').catch(() => '');
    if (text.includes('ClusterLoadAssignment') && (text.match(/"typeUrl"/g) ?? []).length >= 4 && text.length > services * 100) return;
    await sleep(100);
  }
  throw new Error(`${path} never held the config of ${services} services`);
}

const show = (label: string, result: { outage: number[]; baseline: number[] }) => {
  const [outage, baseline] = [median(result.outage), median(result.baseline)];
  console.log(
    `${label}: Envoy started → first 200 on the dynamic listener, median of ${runs}: outage (last-known-good) ${outage} ms, discovery server up ${baseline} ms (${(outage / baseline).toFixed(2)}×)`,
  );
};

try {
  for (const mode of ['sotw', 'delta'] as const) {
    show(`${mode}: Envoy kill -9`, await envoyKills(mode));
    show(`${mode}: agent SIGKILL + restart, same --configPath`, await agentRestarts(mode));
    await lastKnownGoodAtScale(3000, mode);
  }
} finally {
  await upstream.close();
}
