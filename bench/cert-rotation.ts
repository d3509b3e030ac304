/**
 * Certificate rotation, end to end with the real Envoy, under load:
 * - write → new epoch LIVE, p50/p95 over ROTATIONS (default 20) rotations,
 *   split into the agent's part (write → Envoy spawned: debounce, read,
 *   check) and Envoy's hot restart (spawned → LIVE), the baseline the total
 *   is compared with;
 * - failed requests while rotating (keep-alive via autocannon + one new TLS
 *   connection per request), and throughput while rotating as a ratio of
 *   the same load without rotations (baseline, same run);
 * - the agent's RSS and CPU while idle with one Envoy, against a bare Node
 *   process and against Envoy itself.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { epochLive, parentPid, startTlsRig, waitForSerial } from '../test/support/tls-rig.ts';
import { sidecarFiles, writeSecretVolume } from '../test/support/certs.ts';
import { keepAliveLoad, newConnectionLoad, type LoadResult } from '../test/support/load.ts';

const rotations = Number(process.env.ROTATIONS ?? 20);
const baselineS = 10;
const rig = await startTlsRig(['--certDebounce', '200ms', '--parentShutdownDuration', '1s']);
await epochLive(rig.agent, 0);
const url = `https://127.0.0.1:${rig.listenerPort}/`;
const load = (seconds: number) => Promise.all([keepAliveLoad(url, 4, seconds), newConnectionLoad(url, 2, seconds)]);
const total = (results: LoadResult[]) => results.reduce((sum, r) => ({ ok: sum.ok + r.ok, failed: sum.failed + r.failed }), { ok: 0, failed: 0 });

const baseline = total(await load(baselineS));

const rotationS = rotations * 2.5 + 5;
const during = load(rotationS);
const samples: { agentMs: number; envoyMs: number; totalMs: number }[] = [];
const loadStart = Date.now();
for (let epoch = 1; epoch <= rotations; epoch++) {
  await sleep(1000);
  const pair = await rig.ca.issue('localhost');
  await writeSecretVolume(rig.certDir, sidecarFiles(rig.ca, pair));
  const written = Date.now();
  const live = await epochLive(rig.agent, epoch);
  const spawned = rig.agent.log.find((entry) => entry.msg === 'envoy started' && entry.epoch === epoch)!;
  samples.push({ agentMs: Number(spawned.time) - written, envoyMs: Number(live.time) - Number(spawned.time), totalMs: Number(live.time) - written });
  await waitForSerial(rig.listenerPort, pair.serial);
  await sleep(1000);
}
const rotating = total(await during);
const rotatingS = (Date.now() - loadStart) / 1000;

const idle = await idleUsage();
await rig.close();

const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const summary = (key: 'agentMs' | 'envoyMs' | 'totalMs') => ({ p50: pct(samples.map((s) => s[key]), 50), p95: pct(samples.map((s) => s[key]), 95) });
const [agentPart, envoyPart, all] = [summary('agentMs'), summary('envoyMs'), summary('totalMs')];
console.log(JSON.stringify({
  rotations,
  writeToLiveMs: all,
  agentPartMs: agentPart,
  envoyHotRestartMs: envoyPart,
  totalVsEnvoyHotRestart: { p50: +(all.p50 / envoyPart.p50).toFixed(2), p95: +(all.p95 / envoyPart.p95).toFixed(2) },
  requests: { baseline: { ...baseline, perS: Math.round(baseline.ok / baselineS) }, rotating: { ...rotating, perS: Math.round(rotating.ok / rotatingS) } },
  throughputRotatingVsBaseline: +((rotating.ok / rotatingS) / (baseline.ok / baselineS)).toFixed(2),
  idle,
}, null, 2));

/** RSS and CPU over 10 s of the agent, of its Envoy, and of a bare Node process. */
async function idleUsage() {
  const envoyPid = rig.agent.envoyPids().at(-1)!;
  await sleep(3000);
  const agentPid = await parentPid(envoyPid);
  const bare = execa(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
  await sleep(1000);
  const pids = { agent: agentPid, envoy: envoyPid, bareNode: bare.pid! };
  const before = await Promise.all(Object.values(pids).map(cpuTicks));
  await sleep(10_000);
  const after = await Promise.all(Object.values(pids).map(cpuTicks));
  const rss = await Promise.all(Object.values(pids).map(rssKb));
  bare.kill();
  await bare.catch(() => undefined);
  const names = Object.keys(pids);
  const usage = Object.fromEntries(
    names.map((name, i) => [name, { rssMiB: +(rss[i]! / 1024).toFixed(1), cpuPercent: +((after[i]! - before[i]!) / 10).toFixed(2) }]),
  );
  return { ...usage, agentRssVsBareNode: +(rss[0]! / rss[2]!).toFixed(2) };
}

/** utime + stime in clock ticks (100 per second on Linux). */
async function cpuTicks(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function rssKb(pid: number): Promise<number> {
  return Number(/^VmRSS:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]);
}
