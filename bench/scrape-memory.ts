/**
 * What scrapes of the merged metrics cost the agent's memory (issue 44): an
 * agent with the real Envoy, Envoy's stats made large (`--clusters`, their
 * stats included: 40 make ~0.5 MB of text), scraped `--scrapes` times (gzip, as
 * Prometheus asks) back to back. Reports the agent's RssAnon and V8 heap used
 * before, and after each quarter; and the RssAnon peak while one pod-network
 * style connection pipelines `--pipelined` gzip scrapes and never reads.
 * This checkout against `--baseline` (default main) built in a temp worktree,
 * in the same run, builds alternating.
 *
 * Run: .tools/bin/node bench/scrape-memory.ts [--clusters 40] [--scrapes 1000] [--pipelined 1000] [--baseline main]
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { startAgent, type RunningAgent } from '../test/support/agent.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { edsCluster, endpoints, simpleHttpService } from '../test/support/resources.ts';
import { waitForStatus } from '../test/support/status-agent.ts';
import { http } from '../src/shared/node-http.ts';
import { buildRef, currentBuild, type Build } from './cost-build.ts';

const options = {
  clusters: { type: 'string', default: '40' },
  scrapes: { type: 'string', default: '1000' },
  pipelined: { type: 'string', default: '1000' },
  baseline: { type: 'string', default: 'main' },
} as const;
const { values } = parseArgs({ options });
const scrapes = Number(values.scrapes);
const clusters = Number(values.clusters);
const pipelined = Number(values.pipelined);

const rssAnonMb = (pid: number) => Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

const gaugeMb = (text: string, name: string) => Number(new RegExp(`^istio_agent_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0) / 2 ** 20;

/** One gzip scrape; the agent's V8 heap used and total (MB), read from the page itself. */
function scrape(port: number): Promise<{ heapMb: number; heapTotalMb: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/stats/prometheus', headers: { 'accept-encoding': 'gzip' }, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = (response.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString();
        resolve({ heapMb: gaugeMb(text, 'nodejs_heap_size_used_bytes'), heapTotalMb: gaugeMb(text, 'nodejs_heap_size_total_bytes'), bytes: text.length });
      });
    });
    request.on('error', reject);
  });
}

/** One connection, `count` pipelined gzip scrapes, never read; the agent's RssAnon peak over the next 5 s. */
async function pipelineAttack(pid: number, port: number, count: number): Promise<number> {
  const socket = connect({ port, host: '127.0.0.1' });
  socket.on('error', () => undefined);
  socket.pause();
  socket.write('GET /stats/prometheus HTTP/1.1\r\nHost: pod\r\nAccept-Encoding: gzip\r\n\r\n'.repeat(count));
  let peak = rssAnonMb(pid);
  for (let tick = 0; tick < 50; tick++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      peak = Math.max(peak, rssAnonMb(pid));
    } catch {
      break; // the agent died (as an old build may, at its descriptor limit)
    }
  }
  socket.destroy();
  return peak;
}

interface At { rss: number; heap: number; heapTotal: number }
interface Result { label: string; before: At; quarters: At[]; pageKb: number; attackPeak: number; afterAttack: number }

async function measure(build: Build, discovery: string): Promise<Result> {
  const statusPort = await freePort();
  const agent: RunningAgent = await startAgent({
    discoveryAddress: discovery, bin: build.bin, viaShebang: build.viaShebang,
    args: ['--statusPort', String(statusPort), '--statsInclusionPrefixes', 'cluster.bulk_'],
    // MALLOC_ARENA_MAX=2 as the image ships it (docs/benchmarks.md, "Node flags").
    env: { MALLOC_ARENA_MAX: '2' },
  });
  try {
    await waitForStatus(statusPort, '/healthz/ready', (answer) => answer.status === 200, 60_000);
    for (let warm = 0; warm < 20; warm++) await scrape(statusPort);
    const first = await scrape(statusPort);
    const before = { rss: rssAnonMb(agent.pid), heap: first.heapMb, heapTotal: first.heapTotalMb };
    const quarters: Result['quarters'] = [];
    for (let done = 0; done < scrapes; ) {
      let last = first;
      for (const end = done + scrapes / 4; done < end; done++) last = await scrape(statusPort);
      quarters.push({ rss: rssAnonMb(agent.pid), heap: last.heapMb, heapTotal: last.heapTotalMb });
    }
    const attackPeak = await pipelineAttack(agent.pid, statusPort, pipelined);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return { label: build.label, before, quarters, pageKb: first.bytes / 1024, attackPeak, afterAttack: rssAnonMb(agent.pid) };
  } finally {
    await agent.stop();
  }
}

const upstreamPort = await freePort();
const bulk = Array.from({ length: clusters }, (_, i) => [edsCluster(`bulk_${i}`), endpoints(`bulk_${i}`, upstreamPort)]).flat();
const peer = await startPeer([...simpleHttpService({ listenerPort: await freePort(), upstreamPort }), ...bulk]);
const builds = [currentBuild(), await buildRef(values.baseline)];
try {
  const results: Result[] = [];
  for (const build of builds) results.push(await measure(build, peer.address));
  const [ours, base] = results as [Result, Result];
  const fmt = (value: number) => value.toFixed(1).padStart(6);
  for (const result of results) {
    console.log(`${result.label}: page ${result.pageKb.toFixed(0)} KB; RssAnon / V8 heap used / heap total (MB) before, then after each quarter of ${scrapes} gzip scrapes:`);
    console.log(`  ${[result.before, ...result.quarters].map((at) => `${fmt(at.rss)} /${fmt(at.heap)} /${fmt(at.heapTotal)}`).join('  ')}`);
    console.log(`  ${pipelined} pipelined scrapes never read: RssAnon peak ${fmt(result.attackPeak)}, 2 s after ${fmt(result.afterAttack)}`);
  }
  const growth = (result: Result) => result.quarters.at(-1)!.rss - result.before.rss;
  console.log(`RssAnon growth over ${scrapes} scrapes: ${fmt(growth(ours))} MB vs ${fmt(growth(base))} MB = ${(growth(ours) / growth(base)).toFixed(2)}x`);
  console.log(`RssAnon after ${scrapes} scrapes: ${(ours.quarters.at(-1)!.rss / base.quarters.at(-1)!.rss).toFixed(2)}x; attack peak ${(ours.attackPeak / base.attackPeak).toFixed(2)}x`);
} finally {
  for (const build of builds) await build.remove();
  await peer.stop();
}
