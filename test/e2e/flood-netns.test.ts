/**
 * Connection floods from the pod network (issue 29): a network namespace
 * opens thousands of idle and half-sent connections to the agent's status
 * port and Envoy's readiness port, over a veth, never loopback. The agent
 * runs with 1024 file descriptors, as a tight container might. While the
 * flood holds, readiness through Envoy (its hop to the agent's socket) and
 * a loopback probe must still answer 200, a new client from the pod network
 * must still get an answer, and the agent's descriptors stay bounded.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { execa, type ResultPromise } from 'execa';
import { isAlive, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { makeNetns, netnsSkipReason, type Netns } from '../support/netns.ts';
import { nodeBin } from '../support/paths.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { get, startStatusAgent, waitForStatus } from '../support/status-agent.ts';

const skip = await netnsSkipReason();

/** Opens `count` connections to each port: a third silent, a third with half a request line, a third mid-headers; holds them; prints how many opened. */
const flooder = `
import { connect } from 'node:net';
const [host, portsJson, countText] = process.argv.slice(1);
const ports = JSON.parse(portsJson);
const count = Number(countText);
const held = [];
let opened = 0;
const open = (port, i) => new Promise((resolve) => {
  const socket = connect(port, host, () => {
    opened++;
    if (i % 3 === 1) socket.write('GET /healthz/rea');
    if (i % 3 === 2) socket.write('GET /healthz/ready HTTP/1.1\\r\\nHost: pod\\r\\nX-Slow: ');
    resolve();
  });
  socket.on('error', () => resolve());
  socket.on('data', () => {});
  held.push(socket);
});
for (const port of ports) for (let i = 0; i < count; i += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => open(port, i + j)));
process.stdout.write(JSON.stringify({ opened }) + '\\n');
setInterval(() => {}, 1000);
`;

/** A process's soft limit on open files, from /proc. */
const openFilesLimit = (pid: number) => Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1]);

/** The agent's open file descriptors, from /proc. */
const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

describe('connection floods from the pod network', { skip }, () => {
  let peer: Peer;
  let netns: Netns;
  let agent: RunningAgent;
  let ports: { readiness: number; status: number };
  const cleanup = suiteCleanup();

  before(async () => {
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
    netns = await makeNetns('flood');
    cleanup.defer(() => netns.remove());
    const started = await startStatusAgent(peer.address);
    agent = started.agent;
    deferStop(cleanup, agent);
    ports = { readiness: started.readinessPort, status: started.statusPort };
  });

  it(
    '2000 idle connections per port: readiness via Envoy and on loopback stay 200, a new pod-network client is answered, the agent holds a bounded number of descriptors',
    { timeout: 120_000 },
    async () => {
      await waitForStatus(ports.readiness, '/healthz/ready', (answer) => answer.status === 200, 30_000);
      // The agent's limit only, set once Envoy runs: an Envoy spawned after it (late, on a busy machine) would inherit 1024
      // and run out of descriptors under its own 2000 connections, which is Envoy's budget, not what this test is about.
      await execa('prlimit', ['--pid', String(agent.pid), '--nofile=1024:1024']);
      assert.deepEqual(agent.envoyPids().map(openFilesLimit).filter((limit) => limit <= 4096), [], 'Envoy keeps its own descriptor limit');
      const baseline = fdCount(agent.pid);
      const flood: ResultPromise = execa(
        'ip',
        ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', flooder, netns.hostIp, JSON.stringify([ports.status, ports.readiness]), '2000'],
        { reject: false, buffer: false },
      );
      cleanup.defer(async () => void (flood.kill('SIGKILL'), await flood));
      const opened = await new Promise<number>((resolve, reject) => {
        flood.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()).opened as number));
        void flood.then((result) => reject(new Error(`the flooder ended: ${String(result.stderr ?? result.exitCode)}`)));
      });
      assert.ok(opened >= 3000, `the flood connected (${opened} of 4000)`);
      const peak = fdCount(agent.pid);
      assert.ok(peak <= baseline + 128 + 64 + 32 + 16, `the agent holds ${peak} descriptors (${baseline} before the flood)`);
      for (let i = 0; i < 5; i++) {
        // Envoy itself holds the 2000 idle connections on its readiness port: on a busy machine one answer of its may take
        // longer than the 5 s timeout (seen at load 14), so it gets two more tries; the agent's own port gets none.
        let viaEnvoy = await get(ports.readiness, '/healthz/ready');
        for (let retry = 0; viaEnvoy.status === 0 && retry < 2; retry++) viaEnvoy = await get(ports.readiness, '/healthz/ready');
        assert.equal(viaEnvoy.status, 200, `readiness through Envoy: ${viaEnvoy.body}`);
        const direct = await get(ports.status, '/healthz/ready');
        assert.equal(direct.status, 200, `readiness on the status port from loopback: ${direct.body}`);
      }
      const [fresh] = await netns.send([{ port: ports.status, method: 'GET', path: '/healthz/ready' }]);
      assert.equal(fresh!.status, 200, 'a new client from the pod network is answered (an idle one made room)');
      assert.ok(isAlive(agent.pid));
      assert.ok(
        agent.log.entries.some((entry) => entry.msg.startsWith('connection cap:')),
        'the shedding is logged',
      );
      assert.ok(agent.log.entries.filter((entry) => entry.msg.startsWith('connection cap:')).length <= 4, 'once a minute per listener, not per connection');
    },
  );
});
