/**
 * The status port (15020) against peers that ask and never read (issue 35),
 * and its content negotiation (issues 34, 44): the text format whatever the
 * Accept, as Istio serves Envoy's part, and gzip when asked.
 * 140 pod-network connections ask for /stats/prometheus with a tiny receive
 * window and never read: a probe from the pod network must still be
 * answered, and the stuck connections must be closed after the send timeout.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { execa, type ResultPromise } from 'execa';
import { isAlive, startAgent, type RunningAgent } from '../support/agent.ts';
import { deferStop, suiteCleanup } from '../support/cleanup.ts';
import { makeNetns, netnsSkipReason, type Netns } from '../support/netns.ts';
import { nodeBin } from '../support/paths.ts';
import { parsePrometheus } from '../support/prometheus.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { edsCluster, endpoints, simpleHttpService } from '../support/resources.ts';
import { waitForStatus } from '../support/status-agent.ts';

const skip = await netnsSkipReason();

/**
 * Opens `count` connections, each asking for the metrics and never reading (a paused socket sees no close either);
 * prints {opened, first}: when the first connected (no answer's send timeout can fire before first + 10 s).
 */
const stuckReaders = `
import { connect } from 'node:net';
const [host, port, countText] = process.argv.slice(1);
const count = Number(countText);
let opened = 0;
let first;
const open = () => new Promise((resolve) => {
  const socket = connect({ port: Number(port), host }, () => {
    opened++;
    first ??= Date.now();
    socket.pause();
    socket.write('GET /stats/prometheus HTTP/1.1\\r\\nHost: pod\\r\\n\\r\\n');
    resolve();
  });
  socket.on('error', () => resolve());
});
for (let i = 0; i < count; i += 20) await Promise.all(Array.from({ length: 20 }, open));
process.stdout.write(JSON.stringify({ opened, first }) + '\\n');
setInterval(() => {}, 1000);
`;

/** The agent's own connections from `peer` (a socket it closed is no longer its, whatever the kernel still owes it). */
async function heldFrom(pid: number, port: number, peer: string): Promise<number> {
  const { stdout } = await execa('ss', ['-tnpH', 'state', 'all', `( sport = :${port} and dst ${peer} )`]);
  return stdout.split('\n').filter((line) => line.includes(`pid=${pid},`)).length;
}

/** The readers' connections in `ns` with an answer waiting unread (or the agent gone: it answered first). */
async function answeredIn(ns: string, port: number): Promise<number> {
  const { stdout } = await execa('ip', ['netns', 'exec', ns, 'ss', '-tnH', `( dport = :${port} )`]);
  return stdout.split('\n').filter((line) => Number(line.trim().split(/\s+/).find((word) => /^\d+$/.test(word)) ?? 0) > 0).length;
}

/**
 * The agent's connections to Envoy's admin: one per scrape being made (readiness, once passed, asks no more). Envoy
 * has sent a page of this size whole and closed its end (the buffers take it), so an unread one is in CLOSE-WAIT.
 */
async function adminConnections(pid: number, adminPort: number): Promise<number> {
  const { stdout } = await execa('ss', ['-tnpH', 'state', 'connected', `( dport = :${adminPort} )`]);
  return stdout.split('\n').filter((line) => line.includes(`pid=${pid},`)).length;
}

/** One GET on loopback through node:http, with the headers given; the body as bytes. */
async function rawGet(port: number, path: string, headers: Record<string, string>): Promise<{ headers: Headers; body: Buffer }> {
  const { http } = await import('../../src/shared/node-http.ts');
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, headers, timeout: 10_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ headers: new Headers(response.headers as Record<string, string>), body: Buffer.concat(chunks) }));
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', reject);
  });
}

describe('the status port: the text format, gzip, and peers that never read', { skip }, () => {
  let peer: Peer;
  let netns: Netns;
  let agent: RunningAgent;
  let statusPort: number;
  const cleanup = suiteCleanup();

  before(async () => {
    // 40 more clusters, their stats included: Envoy's stats grow to some hundreds of KB, more than the kernel's buffers take for a peer that never reads.
    const upstreamPort = await freePort();
    const bulk = Array.from({ length: 40 }, (_, i) => [edsCluster(`bulk_${i}`), endpoints(`bulk_${i}`, upstreamPort)]).flat();
    peer = await startPeer([...simpleHttpService({ listenerPort: await freePort(), upstreamPort }), ...bulk]);
    cleanup.defer(() => peer.stop());
    netns = await makeNetns('slowread');
    cleanup.defer(() => netns.remove());
    statusPort = await freePort();
    agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--statusPort', String(statusPort), '--readinessPort', String(await freePort())],
      env: { ISTIO_METAJSON_ANNOTATIONS: JSON.stringify({ 'sidecar.istio.io/statsInclusionPrefixes': 'cluster.bulk_' }) },
    });
    deferStop(cleanup, agent);
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 30_000);
  });

  it('serves the text format to Prometheus\'s default Accept (OpenMetrics first): a strict parser takes it, Envoy\'s counters keep their names', async () => {
    const accept = 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1';
    const asked = await rawGet(statusPort, '/stats/prometheus', { accept });
    assert.match(asked.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const families = parsePrometheus(asked.body.toString());
    assert.equal(families.get('istio_agent_epochs_started_total')?.type, 'COUNTER');
    for (const name of ['envoy_cluster_upstream_rq_total', 'envoy_cluster_upstream_cx_total']) assert.equal(families.get(name)?.type, 'COUNTER', name);
    assert.ok(!asked.body.toString().includes('# EOF'));
    const plain = await rawGet(statusPort, '/stats/prometheus', { accept: 'text/plain' });
    assert.deepEqual([...parsePrometheus(plain.body.toString()).keys()], [...families.keys()], 'the same families whatever the Accept');
  });

  it('gzips an answer when the client takes gzip, and only then', async () => {
    const zipped = await rawGet(statusPort, '/stats/prometheus', { 'accept-encoding': 'gzip' });
    assert.equal(zipped.headers.get('content-encoding'), 'gzip');
    // Streamed from Envoy's admin through gzip as the client reads (issue 44): chunked, no length known up front.
    assert.equal(zipped.headers.get('transfer-encoding'), 'chunked');
    assert.equal(zipped.headers.get('content-length'), null);
    assert.match(gunzipSync(zipped.body).toString(), /^istio_agent_epochs_started_total 1$/m);
    const plain = await rawGet(statusPort, '/stats/prometheus', {});
    assert.equal(plain.headers.get('content-encoding'), null);
    assert.ok(plain.body.byteLength > zipped.body.byteLength * 3, `gzip pays (${plain.body.byteLength} → ${zipped.body.byteLength} bytes)`);
    assert.ok(plain.body.byteLength > 256 * 1024, `the metrics are large enough to stick in a peer that never reads (${plain.body.byteLength} bytes)`);
  });

  const title = '200 pod-network peers that never read: a probe from the pod network is still answered, and they are closed after the send timeout';
  it(title, { timeout: 120_000 }, async () => {
    // A tiny receive window in the namespace: the answers stay stuck in the agent, whatever their size.
    await execa('ip', ['netns', 'exec', netns.name, 'sysctl', '-qw', 'net.ipv4.tcp_rmem=4096 4096 4096']);
    const argv = ['netns', 'exec', netns.name, nodeBin, '--input-type=module', '-e', stuckReaders, netns.hostIp, String(statusPort), '200'];
    const readers: ResultPromise = execa('ip', argv, { reject: false, buffer: false });
    cleanup.defer(async () => void (readers.kill('SIGKILL'), await readers));
    // Counted from the first reader's connect, not from the readers' start: on a busy machine node takes seconds to start.
    const { opened, first: started } = await new Promise<{ opened: number; first: number }>((resolve, reject) => {
      readers.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { opened: number; first: number }));
      void readers.then((result) => reject(new Error(`the readers ended: ${String(result.stderr ?? result.exitCode)}`)));
    });
    assert.ok(opened >= 128, `the stuck readers connected (${opened} of 200)`);
    const innerIp = (await execa('ip', ['-n', netns.name, '-4', '-o', 'addr', 'show', 'scope', 'global'])).stdout.match(/inet ([\d.]+)/)![1]!;
    // The agent answers them as its load allows: wait until most have an answer (the first bytes in their socket), or
    // 6 s (inside the 10 s send timeout). It makes one scrape at a time for that peer (issue 44: a hundred made at once
    // kept the event loop from accepting the kubelet's probe for seconds): the others wait a moment or are answered 503
    // at once, so its connections to Envoy's admin stay a handful however many readers ask.
    let answered = 0;
    let toAdmin = 0;
    do {
      await new Promise((resolve) => setTimeout(resolve, 250));
      answered = Math.max(answered, await answeredIn(netns.name, statusPort));
      toAdmin = Math.max(toAdmin, await adminConnections(agent.pid, agent.adminPort));
    } while (answered < 126 && Date.now() - started < 6000);
    assert.ok(answered >= 64, `the agent answered the stuck readers (${answered} have bytes waiting)`);
    const held = await heldFrom(agent.pid, statusPort, innerIp);
    // Answers handed over and left unread must not hold a slot a probe needs: a probe gets through well before the send
    // timeout (10 s) frees anything. One that finds every slot busy is refused at once, as the kubelet's would be; it tries again.
    const probeUntil = async (by: number, tries: number) => {
      let probe = { status: 0, ms: 0, tried: 0 };
      while (probe.status !== 200 && Date.now() - started < by && probe.tried < tries) {
        probe = { ...(await netns.send([{ port: statusPort, method: 'GET', path: '/healthz/ready' }]))[0]!, tried: probe.tried + 1 };
      }
      return probe;
    };
    const atProbe = Date.now() - started;
    const probe = await probeUntil(9000, 20);
    const timing = `probing from ${atProbe} ms after they connected, ${probe.tried} tries, the last ${probe.ms} ms`;
    assert.equal(probe.status, 200, `a pod-network probe is answered while ${held} readers hold on (${answered} answered; ${timing})`);
    toAdmin = Math.max(toAdmin, await adminConnections(agent.pid, agent.adminPort));
    assert.ok(toAdmin <= 3, `scrapes made at once for one peer: ${toAdmin} connections to Envoy's admin`);
    for (let next = 0; next < 3; next++) {
      const again = await probeUntil(Infinity, 3);
      assert.equal(again.status, 200, `and the next probes too (${again.ms} ms)`);
    }
    // The send timeout is 10 s; the idle sweep (30 s) must not be what closes them.
    const deadline = started + 25_000;
    let left = held;
    while (left > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      left = await heldFrom(agent.pid, statusPort, innerIp);
    }
    assert.equal(left, 0, `the agent has closed every stuck answer after the send timeout (${left} left, ${Date.now() - started} ms after they connected)`);
    assert.ok(isAlive(agent.pid));
  });
});
