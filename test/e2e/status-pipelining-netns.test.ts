/**
 * Scrapes from the pod network (issue 44). Pipelined: one connection from a
 * network namespace sends 3,000 `GET /stats/prometheus` (gzip) back to back
 * and never reads. Node's server hands every pipelined request over at once:
 * 3,000 scrapes of Envoy at once took the agent to its descriptor limit and
 * 600 MB, and readiness stopped answering. The agent must answer one request
 * of a connection at a time (closing one that queues more than a few), so
 * readiness through Envoy and on the status port stays 200, and the agent's
 * descriptors and memory stay where they were. Streamed: Envoy's stats go
 * from its admin to the client as the client reads, so a client that stops
 * reading leaves the rest of Envoy's answer unread, never held in the agent.
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
import { edsCluster, endpoints, simpleHttpService } from '../support/resources.ts';
import { startStatusAgent, waitForStatus } from '../support/status-agent.ts';

const skip = await netnsSkipReason();

/** One connection, `count` pipelined scrapes (Accept-Encoding: `encoding`) in one write, never read (a paused socket); prints {sent} once written. */
const pipeliner = `
import { connect } from 'node:net';
const [host, port, countText, encoding] = process.argv.slice(1);
const socket = connect({ port: Number(port), host }, () => {
  socket.pause();
  const one = 'GET /stats/prometheus HTTP/1.1\\r\\nHost: pod\\r\\nAccept-Encoding: ' + encoding + '\\r\\n\\r\\n';
  socket.write(one.repeat(Number(countText)), () => process.stdout.write(JSON.stringify({ sent: Number(countText) }) + '\\n'));
});
socket.on('error', () => process.stdout.write(JSON.stringify({ sent: -1 }) + '\\n'));
setInterval(() => {}, 1000);
`;

const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const rssAnonMb = (pid: number) => Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** The agent's connections to Envoy's admin with bytes it has not read (Recv-Q of its end). */
async function unreadFromAdmin(adminPort: number): Promise<number[]> {
  const { stdout } = await execa('ss', ['-tnH', 'state', 'established', `( dport = :${adminPort} )`]);
  return stdout.split('\n').filter(Boolean).map((line) => Number(line.trim().split(/\s+/)[0])).filter((queued) => queued > 0);
}

describe('scrapes from one pod-network connection: pipelined, and never read', { skip }, () => {
  let peer: Peer;
  let netns: Netns;
  let agent: RunningAgent;
  let ports: { readiness: number; status: number };
  let adminPort: number;
  const cleanup = suiteCleanup();

  before(async () => {
    // 400 clusters, their stats included: Envoy's stats are some MB, more than the sockets' buffers between Envoy and a client hold.
    const upstreamPort = await freePort();
    const bulk = Array.from({ length: 400 }, (_, i) => [edsCluster(`bulk_${i}`), endpoints(`bulk_${i}`, upstreamPort)]).flat();
    peer = await startPeer([...simpleHttpService({ listenerPort: await freePort(), upstreamPort }), ...bulk]);
    cleanup.defer(() => peer.stop());
    netns = await makeNetns('pipeline');
    cleanup.defer(() => netns.remove());
    // A tiny receive window in the namespace: what the agent sends a client that never reads stays in the agent's side.
    await execa('ip', ['netns', 'exec', netns.name, 'sysctl', '-qw', 'net.ipv4.tcp_rmem=4096 4096 4096']);
    const started = await startStatusAgent(peer.address, ['--statsInclusionPrefixes', 'cluster.bulk_']);
    agent = started.agent;
    deferStop(cleanup, agent);
    ports = { readiness: started.readinessPort, status: started.statusPort };
    adminPort = started.agent.adminPort;
    await waitForStatus(ports.readiness, '/healthz/ready', (answer) => answer.status === 200, 30_000);
    // The agent's limit, once Envoy runs: an Envoy spawned after it (late, on a busy machine) would inherit it too.
    await execa('prlimit', ['--pid', String(agent.pid), '--nofile=1024:1024']);
  });

  it('3000 pipelined gzip scrapes never read: readiness from the pod network stays 200, descriptors and memory stay bounded', { timeout: 120_000 }, async () => {
    const before = { fds: fdCount(agent.pid), rss: rssAnonMb(agent.pid) };
    const argv = ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', pipeliner, netns.hostIp, String(ports.status), '3000', 'gzip'];
    const attack: ResultPromise = execa('ip', argv, { reject: false, buffer: false });
    cleanup.defer(async () => void (attack.kill('SIGKILL'), await attack));
    const sent = await new Promise<number>((resolve, reject) => {
      // Its first line: on a busy machine the agent's cut of the connection (an error line) may come in the same chunk.
      attack.stdout!.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString().split('\n')[0]!) as { sent: number }).sent));
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
    // Gone before the next test: its scrape holds the one place the gate gives this peer (src/status/scrape-gate.ts).
    attack.kill('SIGKILL');
    await attack;
  });

  it('a scrape never read leaves Envoy\'s answer unread in the agent\'s connection to admin: streamed, not held whole', { timeout: 60_000 }, async () => {
    const argv = ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', pipeliner, netns.hostIp, String(ports.status), '1', 'identity'];
    const reader: ResultPromise = execa('ip', argv, { reject: false, buffer: false });
    cleanup.defer(async () => void (reader.kill('SIGKILL'), await reader));
    // Held while the client reads nothing: seen in two looks a second apart, well inside the 10 s send timeout.
    let held = 0;
    for (const deadline = Date.now() + 8000; held < 2 && Date.now() < deadline; ) {
      held = (await unreadFromAdmin(adminPort)).length > 0 ? held + 1 : 0;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    assert.equal(held, 2, 'the agent stopped reading Envoy\'s stats when the client stopped reading');
    reader.kill('SIGKILL');
    await reader;
  });
});
