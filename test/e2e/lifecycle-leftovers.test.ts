import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { access, mkdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { assertGone, isAlive, startAgent } from '../support/agent.ts';
import { envoyBin } from '../support/paths.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { duplicateKeys } from '../support/duplicate-keys.ts';
import { epochLive, startTlsRig } from '../support/tls-rig.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';

const exists = (path: string) => access(path).then(() => true, () => false);

it("through a hot restart and a stop: no log line repeats a key, and the chain's shared memory is removed on exit", { timeout: 90_000 }, async () => {
  const rig = await startTlsRig();
  let sharedMemory = '';
  try {
    await epochLive(rig.agent, 0);
    const baseId = Number((await readFile(join(rig.agent.dir, 'config', 'envoy-base-id'), 'utf8')).trim());
    sharedMemory = `/dev/shm/envoy_shared_memory_${baseId * 10}`;
    assert.ok(await exists(sharedMemory), `Envoy made ${sharedMemory}`);
    await rig.rotate();
    await epochLive(rig.agent, 1);
    // The parent leaves after --parentShutdownDuration (3 s), ending its ADS stream.
    await rig.agent.log.waitFor((entry) => entry.msg === 'xDS stream ended', 15_000, 'a relayed stream to end');
  } finally {
    await rig.close();
    await assertGone(rig.agent.envoyPids());
  }
  assert.equal(await exists(sharedMemory), false, `${sharedMemory} left behind`);
  const messages = new Set(rig.agent.log.entries.map((entry) => entry.msg));
  for (const msg of ['envoy started', 'xDS stream ended', 'epoch live']) assert.ok(messages.has(msg), `saw "${msg}"`);
  const repeated = rig.agent.log.raw.map((line) => [line, duplicateKeys(line)] as const).filter(([, keys]) => keys.length > 0);
  assert.deepEqual(repeated.map(([line, keys]) => `${keys.join(',')}: ${line.slice(0, 160)}`), []);
});

it(
  'the shared memory a SIGKILLed agent left (its base id still in --configPath) is removed when the next agent starts there',
  { timeout: 60_000 },
  async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'stale-base-id-');
    const configPath = join(dir, 'config');
    // A base id no Envoy on this host picked: Envoy's own ids stay far below it.
    const staleId = 2_000_000_000 + (process.pid % 100_000);
    const stale = `/dev/shm/envoy_shared_memory_${staleId * 10}`;
    await mkdir(configPath, { mode: 0o700 });
    await writeFile(join(configPath, 'envoy-base-id'), `${staleId}\n`);
    await writeFile(stale, '');
    cleanup.defer(() => rm(stale, { force: true }));
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:9', args: ['--configPath', configPath] });
    deferStop(cleanup, agent);
    await agent.log.waitFor((entry) => entry.msg === 'envoy started', 15_000, 'epoch 0');
    assert.equal(await exists(stale), false, `${stale} left behind`);
  },
);

it(
  'a start that fails part way (the status port taken by the DNS proxy) undoes what had started: no socket left, no Envoy, one line',
  { timeout: 60_000 },
  async (t) => {
    await using cleanup = new AsyncDisposableStack();
    const peer = await startPeer([]);
    cleanup.defer(() => peer.stop());
    const statusPort = await freePort();
    // Checked free before anything starts; the DNS proxy, started first, then holds it on 127.0.0.1.
    const agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--statusPort', String(statusPort)],
      env: { ISTIO_META_DNS_CAPTURE: 'true', DNS_PROXY_ADDR: `127.0.0.1:${statusPort}` },
    });
    deferStop(cleanup, agent);
    const result = await agent.exited;
    assert.notEqual(result.exitCode, 0, agent.stderr());
    const lines = agent.stderr().trim().split('\n');
    assert.equal(lines.length, 1, agent.stderr());
    assert.match(lines[0]!, /EADDRINUSE/);
    t.diagnostic(`exit ${result.exitCode}: ${lines[0]}`);
    assert.deepEqual(agent.envoyPids(), [], 'no Envoy was started');
    for (const socket of [join(agent.dir, 'config', 'XDS'), join(agent.dir, 'sds.sock')]) assert.equal(await exists(socket), false, `${socket} left behind`);
  },
);

it(
  'an Envoy a SIGKILLed agent left on the same --configPath (before Envoy armed its parent-death signal) is stopped when the next agent starts there',
  { timeout: 60_000 },
  async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'left-envoy-');
    const configPath = join(dir, 'config');
    await mkdir(configPath, { mode: 0o700 });
    const bootstrap = join(configPath, 'envoy-rev0.json');
    await writeFile(bootstrap, JSON.stringify({ admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } } }));
    // The outer shell exits at once, so this Envoy is an orphan, as one is whose agent was SIGKILLed.
    const spawned = execFileSync('sh', ['-c', `"$0" -c "$1" --use-dynamic-base-id >/dev/null 2>&1 & echo $!`, envoyBin, bootstrap], { encoding: 'utf8' });
    const leftover = Number(spawned.trim());
    cleanup.defer(() => void (isAlive(leftover) && process.kill(leftover, 'SIGKILL')));
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:9', args: ['--configPath', configPath] });
    deferStop(cleanup, agent);
    const line = await agent.log.waitFor((entry) => entry.msg === 'stopped an Envoy an earlier agent left running', 15_000, 'the leftover line');
    assert.deepEqual([line.pid, line.exe], [leftover, await realpath(envoyBin)], 'what was killed: its pid and the binary it ran');
    await agent.log.waitFor((entry) => entry.msg === 'envoy started', 15_000, 'epoch 0');
    await assertGone([leftover]);
  },
);
