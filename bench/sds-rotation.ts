/**
 * Certificate rotation over SDS against today's hot-restart path, same run,
 * same machine, same load:
 * - SDS: a listener reading `default` over sds-grpc; write → the new serial
 *   presented by Envoy (a TLS client polls every 20 ms);
 * - hot restart: a listener reading the files itself (Istio 1.1 style);
 *   write → the new serial presented, through a new epoch.
 * p50/p95 over ROTATIONS (default 10) each, and failed requests during each
 * (keep-alive + one new TLS connection per request).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { epochLive, servedSerial, startTlsRig } from '../test/support/tls-rig.ts';
import { startSdsRig } from '../test/support/sds-rig.ts';
import { sidecarFiles, writeSecretVolume, type KeyPair, type TestCa } from '../test/support/certs.ts';
import { keepAliveLoad, newConnectionLoad, type LoadResult } from '../test/support/load.ts';

const rotations = Number(process.env.ROTATIONS ?? 10);

interface Rig {
  ca: TestCa;
  certDir: string;
  listenerPort: number;
  close(): Promise<void>;
}

/** ms from the write to the first handshake that presents `pair`. */
async function timeToServed(rig: Rig, pair: KeyPair): Promise<number> {
  await writeSecretVolume(rig.certDir, sidecarFiles(rig.ca, pair));
  const written = performance.now();
  for (;;) {
    if ((await servedSerial(rig.listenerPort)) === pair.serial) return performance.now() - written;
    if (performance.now() - written > 30_000) throw new Error('the new certificate was never served');
    await sleep(20);
  }
}

async function measure(rig: Rig) {
  const url = `https://127.0.0.1:${rig.listenerPort}/`;
  const loads = Promise.all([keepAliveLoad(url, 2, rotations * 2 + 2), newConnectionLoad(url, 1, rotations * 2 + 2)]);
  const samples: number[] = [];
  for (let i = 0; i < rotations; i++) {
    await sleep(1000);
    const pair = await rig.ca.issue('localhost');
    samples.push(await timeToServed(rig, pair));
  }
  const results: LoadResult[] = await loads;
  return { samples, ok: results.reduce((sum, r) => sum + r.ok, 0), failed: results.reduce((sum, r) => sum + r.failed, 0) };
}

const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const summary = (values: number[]) => ({ p50: Math.round(pct(values, 50)), p95: Math.round(pct(values, 95)) });

const sdsRig = await startSdsRig(['--certDebounce', '200ms']);
await epochLive(sdsRig.agent, 0);
const sds = await measure(sdsRig);
const sdsEpochs = sdsRig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').length;
await sdsRig.close();

const restartRig = await startTlsRig(['--certDebounce', '200ms', '--parentShutdownDuration', '1s']);
await epochLive(restartRig.agent, 0);
const restart = await measure(restartRig);
const restartEpochs = restartRig.agent.log.entries.filter((entry) => entry.msg === 'envoy started').length;
await restartRig.close();

const [overSds, hotRestart] = [summary(sds.samples), summary(restart.samples)];
console.log(JSON.stringify({
  rotations,
  writeToServedMs: { overSds, hotRestart },
  sdsVsHotRestart: { p50: +(overSds.p50 / hotRestart.p50).toFixed(2), p95: +(overSds.p95 / hotRestart.p95).toFixed(2) },
  envoyEpochsStarted: { overSds: sdsEpochs, hotRestart: restartEpochs },
  requests: { overSds: { ok: sds.ok, failed: sds.failed }, hotRestart: { ok: restart.ok, failed: restart.failed } },
}, null, 2));
