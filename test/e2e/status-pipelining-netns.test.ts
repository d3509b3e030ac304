/**
 * Pipelined scrapes from the pod network (issue 44): one connection from a
 * network namespace sends 3,000 `GET /stats/prometheus` (gzip) back to back
 * and never reads. Node's server hands every pipelined request over at once:
 * 3,000 scrapes of Envoy at once took the agent to its descriptor limit and
 * 600 MB, and readiness stopped answering. The agent must answer one request
 * of a connection at a time (closing one that queues more than a few), so
 * readiness through Envoy and on the status port stays 200, and the agent's
 * descriptors and memory stay where they were.
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
import { startStatusAgent, waitForStatus } from '../support/status-agent.ts';

const skip = await netnsSkipReason();

/** One connection, `count` pipelined gzip scrapes in one write, never read (a paused socket); prints {sent} once written. */
const pipeliner = `
import { connect } from 'node:net';
const [host, port, countText] = process.argv.slice(1);
const socket = connect({ port: Number(port), host }, () => {
  socket.pause();
  const one = 'GET /stats/prometheus HTTP/1.1\\r\\nHost: pod\\r\\nAccept-Encoding: gzip\\r\\n\\r\\n';
  socket.write(one.repeat(Number(countText)), () => process.stdout.write(JSON.stringify({ sent: Number(countText) }) + '\\n'));
});
socket.on('error', () => process.stdout.write(JSON.stringify({ sent: -1 }) + '\\n'));
setInterval(() => {}, 1000);
`;

const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const rssAnonMb = (pid: number) => Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe('pipelined scrapes on one pod-network connection', { skip }, () => {
  let peer: Peer;
  let netns: Netns;
  let agent: RunningAgent;
  let ports: { readiness: number; status: number };
  const cleanup = suiteCleanup();

  before(async () => {
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
    cleanup.defer(() => peer.stop());
    netns = await makeNetns('pipeline');
    cleanup.defer(() => netns.remove());
    const started = await startStatusAgent(peer.address);
    agent = started.agent;
    deferStop(cleanup, agent);
    ports = { readiness: started.readinessPort, status: started.statusPort };
    await execa('prlimit', ['--pid', String(agent.pid), '--nofile=1024:1024']);
    await waitForStatus(ports.readiness, '/healthz/ready', (answer) => answer.status === 200, 30_000);
  });

  it('3000 pipelined gzip scrapes never read: readiness from the pod network stays 200, descriptors and memory stay bounded', { timeout: 120_000 }, async () => {
    const before = { fds: fdCount(agent.pid), rss: rssAnonMb(agent.pid) };
    await execa('ip', ['netns', 'exec', netns.name, 'sysctl', '-qw', 'net.ipv4.tcp_rmem=4096 4096 4096']);
    const argv = ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', pipeliner, netns.hostIp, String(ports.status), '3000'];
    const attack: ResultPromise = execa('ip', argv, { reject: false, buffer: false });
    cleanup.defer(async () => void (attack.kill('SIGKILL'), await attack));
    const sent = await new Promise<number>((resolve, reject) => {
      attack.stdout!.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString()) as { sent: number }).sent));
      void attack.then((result) => reject(new Error(`the pipeliner ended: ${String(result.stderr ?? result.exitCode)}`)));
    });
    assert.equal(sent, 3000, 'the pipelined requests went out');
    let peak = { fds: 0, rss: 0 };
    for (let round = 0; round < 10; round++) {
      const answers = await netns.send([
        { port: ports.readiness, method: 'GET', path: '/healthz/ready' },
        { port: ports.status, method: 'GET', path: '/healthz/ready' },
      ]);
      for (const answer of answers) assert.equal(answer.status, 200, `round ${round}: readiness on :${answer.port} from the pod network (${answer.body})`);
      peak = { fds: Math.max(peak.fds, fdCount(agent.pid)), rss: Math.max(peak.rss, rssAnonMb(agent.pid)) };
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.ok(peak.fds <= before.fds + 16, `the agent holds ${peak.fds} descriptors (${before.fds} before)`);
    assert.ok(peak.rss <= before.rss + 40, `the agent's RssAnon peaked at ${peak.rss.toFixed(1)} MB (${before.rss.toFixed(1)} MB before)`);
    assert.ok(isAlive(agent.pid));
  });
});
