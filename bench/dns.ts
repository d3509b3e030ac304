// The DNS proxy's cost, as ratios against baselines measured in the same run:
// - queries/s and p50/p99 over UDP for a name the agent answers from its table
//   and for a name it forwards, against the same queries sent straight to the
//   test resolver (Node, dns-packet; in a namespace of its own at a routed
//   address, as the cluster DNS) the agent forwards to;
// - the agent's RSS with a 10,000-name table, against the same agent before
//   its first table;
// - the max event-loop delay (perf_hooks.monitorEventLoopDelay) while a
//   100,000-name table loads in slices, against the same table built in one
//   go, same run (and an idle loop over the same time); the same for keeping
//   it on disk, against one JSON.stringify of it.
// Needs root (a network namespace, as the e2e test). Run: .tools/bin/node bench/dns.ts [--quick]
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { execa } from 'execa';
import { encodeNameTable, type NameInfo } from '../src/dns/name-table-wire.ts';
import { LastKnownGoodTable } from '../src/dns/last-known-good-table.ts';
import { defaultSliceMs, TableStore } from '../src/dns/table-store.ts';
import { nameTableType } from '../src/discovery/type-urls.ts';
import { readNdsResponse } from '../src/xds/relay/nds-wire.ts';
import { lenField } from '../src/grpc/proto-wire.ts';
import { startAgent } from '../test/support/agent.ts';
import { clusterDnsIp, startClusterDns, writeNetnsResolvConf } from '../test/support/dns-netns.ts';
import { makeNetns, netnsSkipReason } from '../test/support/netns.ts';
import { nodeBin, repoRoot } from '../test/support/paths.ts';
import { startPeer, type NameTableJson } from '../test/support/peer.ts';

const quick = process.argv.includes('--quick');
const queries = quick ? 5_000 : 30_000;
const concurrency = 32;

const loadScript = `
const { createSocket } = require('node:dgram');
const packet = require(${JSON.stringify(`${repoRoot}node_modules/dns-packet/index.js`)});
const [host, port, name, total, parallel] = process.argv.slice(1);
const socket = createSocket('udp4');
const pending = new Map();
socket.on('message', (message) => { const id = message.readUInt16BE(0); const started = pending.get(id); if (started !== undefined) { pending.delete(id); latencies.push(performance.now() - started); next(); } });
const latencies = [];
let sent = 0, id = 0;
function next() {
  if (sent >= Number(total)) { if (pending.size === 0) finish(); return; }
  sent++; id = (id + 1) & 0xffff;
  pending.set(id, performance.now());
  socket.send(packet.encode({ id, type: 'query', flags: packet.RECURSION_DESIRED, questions: [{ name, type: 'A' }] }), Number(port), host);
}
let start;
function finish() {
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ qps: latencies.length / seconds, p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)], answered: latencies.length }));
  process.exit(0);
}
setTimeout(() => { process.stdout.write(JSON.stringify({ error: 'timeout', answered: latencies.length })); process.exit(1); }, 120000);
socket.bind(0, () => { start = performance.now(); for (let i = 0; i < Number(parallel); i++) next(); });
`;

interface Load { qps: number; p50: number; p99: number; answered: number }

async function load(netns: string, target: { host: string; port: number }, name: string): Promise<Load> {
  const result = await execa(
    'ip',
    ['netns', 'exec', netns, nodeBin, '-e', loadScript, target.host, String(target.port), name, String(queries), String(concurrency)],
    { reject: false, timeout: 150_000 },
  );
  if (result.exitCode !== 0) throw new Error(`load against ${target.host}:${target.port} ${name} failed: ${result.stdout} ${result.stderr}`);
  return JSON.parse(result.stdout) as Load;
}

const table = (count: number): NameTableJson =>
  Object.fromEntries(
    Array.from({ length: count }, (_, at) => [`svc-${at}.bench.internal`, { ips: [`10.${at >> 16}.${(at >> 8) & 255}.${at & 255}`], registry: 'External' }]),
  );
const rssKiB = (pid: number) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const settle = () => new Promise((resolve) => setTimeout(resolve, 2000));
const fmt = (load: Load) => `${Math.round(load.qps)} q/s, p50 ${load.p50.toFixed(3)} ms, p99 ${load.p99.toFixed(3)} ms`;

async function agentFigures(): Promise<void> {
  const netns = await makeNetns('dnsb');
  const undo: (() => Promise<unknown>)[] = [() => netns.remove()];
  try {
    undo.push(await writeNetnsResolvConf(netns.name));
    const upstream: Server = createServer((_request, response) => response.end('ok'));
    await new Promise<void>((resolve) => upstream.listen(0, netns.hostIp, resolve));
    undo.push(() => new Promise((resolve) => upstream.close(resolve)));
    const peer = await startPeer([], { address: `${netns.hostIp}:0` });
    undo.push(() => peer.stop());
    const resolver = await startClusterDns(netns.name);
    undo.push(() => resolver.stop());
    const agent = await startAgent({
      discoveryAddress: `${netns.hostIp}:${peer.port}`,
      wrap: ['ip', 'netns', 'exec', netns.name],
      args: ['--statusPort', '15020'],
      env: { ISTIO_META_ENABLE_DNS_SERVER: 'true' },
    });
    undo.push(() => agent.stop());
    await agent.log.waitFor((entry) => entry.msg === 'subscribed to the DNS name table', 30_000);
    await settle();
    const before = rssKiB(agent.pid);
    await peer.setNameTable(table(10_000));
    await agent.log.waitFor((entry) => entry.msg === 'DNS name table loaded', 30_000);
    await settle();
    const after = rssKiB(agent.pid);
    const agentAt = { host: '127.0.0.1', port: 15053 };
    const direct = await load(netns.name, { host: clusterDnsIp, port: 53 }, 'external.test');
    const known = await load(netns.name, agentAt, 'svc-4242.bench.internal');
    const forwarded = await load(netns.name, agentAt, 'external.test');
    console.log(`UDP, ${queries} queries, ${concurrency} in flight:`);
    console.log(`  straight to the test resolver (baseline): ${fmt(direct)}`);
    console.log(
      `  known name, answered by the agent:        ${fmt(known)}  → ${(known.qps / direct.qps).toFixed(2)}× the baseline's q/s, p50 ${(known.p50 / direct.p50).toFixed(2)}×, p99 ${(known.p99 / direct.p99).toFixed(2)}×`,
    );
    console.log(
      `  forwarded name, through the agent:         ${fmt(forwarded)}  → ${(forwarded.qps / direct.qps).toFixed(2)}× the baseline's q/s, p50 ${(forwarded.p50 / direct.p50).toFixed(2)}×, p99 ${(forwarded.p99 / direct.p99).toFixed(2)}×`,
    );
    console.log(
      `agent RSS: ${(before / 1024).toFixed(1)} MiB before the first table, ${(after / 1024).toFixed(1)} MiB with 10,000 names → ${(after / before).toFixed(3)}× (+${((after - before) / 1024).toFixed(1)} MiB)`,
    );
  } finally {
    for (const step of undo.reverse()) await step().catch((error: Error) => console.error(`cleanup: ${error.message}`));
  }
}

/** The longest event-loop delay while `work` runs (ms), by perf_hooks.monitorEventLoopDelay at 1 ms resolution. */
async function maxLoopDelay(work: () => Promise<unknown>): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  // A turn before and a timer after, so the histogram's timer sees the whole of `work`, one go included.
  await new Promise((resolve) => setTimeout(resolve, 5));
  await work();
  await new Promise((resolve) => setTimeout(resolve, 5));
  histogram.disable();
  return histogram.max / 1e6;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function stallFigures(): Promise<void> {
  // Half Kubernetes services in 50 namespaces (each also answers as name.ns and name.ns.svc), half ServiceEntry hosts: 200,000 names.
  const ip = (at: number) => [`10.${at >> 16}.${(at >> 8) & 255}.${at & 255}`];
  const bytes = encodeNameTable(Array.from({ length: 100_000 }, (_, at): [string, Partial<NameInfo>] => at % 2
    ? [`svc-${at}.bench.internal`, { ips: ip(at), registry: 'External' }]
    : [`svc-${at}.ns-${at % 50}.svc.cluster.local`, { ips: ip(at), registry: 'Kubernetes', shortname: `svc-${at}`, namespace: `ns-${at % 50}` }]));
  const pod = { namespace: 'default', domain: 'default.svc.cluster.local', search: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'] };
  const runs = quick ? 3 : 7;
  let names = 0;
  const figures = {
    oneGo: [] as number[],
    sliced: [] as number[],
    idle: [] as number[],
    oneGoMs: [] as number[],
    slicedMs: [] as number[],
    steps: [] as number[],
    slices: [] as number[],
  };
  // Interleaved, so both see the same machine; each store is dropped after its run, as a swapped-out table is.
  for (let run = 0; run < runs; run++) {
    for (const sliceMs of [Infinity, undefined]) {
      const store = new TableStore({ pod, now: () => Date.now(), sliceMs });
      const started = performance.now();
      const delay = await maxLoopDelay(() => store.load(bytes, 'v1', 'nds'));
      const { buildMs, longestStepMs, slices } = store.debug(false);
      names = store.table!.size;
      if (sliceMs === Infinity) figures.oneGo.push(delay), figures.oneGoMs.push(buildMs!);
      else {
        figures.sliced.push(delay), figures.slicedMs.push(buildMs!), figures.steps.push(longestStepMs!), figures.slices.push(slices!);
        figures.idle.push(await maxLoopDelay(() => new Promise((resolve) => setTimeout(resolve, performance.now() - started))));
      }
    }
  }
  const [oneGo, sliced, idle] = [median(figures.oneGo), median(figures.sliced), median(figures.idle)];
  console.log(`100,000-entry table (${(bytes.length / 2 ** 20).toFixed(1)} MiB, ${names} names), medians of ${runs} interleaved runs:`);
  console.log(
    `  max event-loop delay while it loads: built in one go ${oneGo.toFixed(1)} ms; in slices of ${defaultSliceMs} ms ${sliced.toFixed(1)} ms → ${(sliced / oneGo).toFixed(3)}× the one-go delay (${(sliced / idle).toFixed(1)}× an idle loop's ${idle.toFixed(1)} ms over the same time; all runs: ${figures.sliced.map((ms) => ms.toFixed(1)).join(', ')})`,
  );
  console.log(
    `  the build's own longest step ${median(figures.steps).toFixed(2)} ms in ${median(figures.slices)} slices (wall clock: a GC pause, or the process waiting for a CPU on a busy machine, inside a step counts); build time sliced ${median(figures.slicedMs).toFixed(0)} ms vs one go ${median(figures.oneGoMs).toFixed(0)} ms → ${(median(figures.slicedMs) / median(figures.oneGoMs)).toFixed(2)}×`,
  );

  const dir = await mkdtemp(join(tmpdir(), 'bench-dns-kept-'));
  try {
    const kept = new LastKnownGoodTable({ path: join(dir, 'dns-name-table.json'), node: 'bench', now: () => Date.now() });
    const lastKnownGoodSliced: number[] = [];
    const lastKnownGoodOneGo: number[] = [];
    for (let run = 0; run < runs; run++) {
      lastKnownGoodOneGo.push(
        await maxLoopDelay(async () => void JSON.stringify({ node: 'bench', at: Date.now(), version: 'v1', table: bytes.toString('base64') })),
      );
      lastKnownGoodSliced.push(await maxLoopDelay(() => kept.write('v1', bytes)));
    }
    console.log(
      `  keeping it on disk: max event-loop delay ${median(lastKnownGoodSliced).toFixed(1)} ms, base64 in slices → ${(median(lastKnownGoodSliced) / median(lastKnownGoodOneGo)).toFixed(2)}× the ${median(lastKnownGoodOneGo).toFixed(1)} ms of one JSON.stringify of it`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const response = Buffer.concat([
    lenField(1, 'v1'),
    lenField(2, Buffer.concat([lenField(1, nameTableType), lenField(2, bytes)])),
    lenField(4, nameTableType),
    lenField(5, 'n1'),
  ]);
  const readStarted = performance.now();
  readNdsResponse(response, 'sotw');
  console.log(`  reading the NDS response that carries it (one step, in the relay): ${(performance.now() - readStarted).toFixed(1)} ms`);
}

/**
 * Heap a 10,000-name table keeps: five built side by side, against the heap
 * after one built and dropped (what a first build frees or compiles once is
 * not the table's), full collections before each reading.
 */
async function retainedHeap(): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const collect = () => {
    for (let i = 0; i < 4; i++) gc();
    return process.memoryUsage().heapUsed;
  };
  const bytes = encodeNameTable(Object.entries(table(10_000)));
  const build = async () => {
    const store = new TableStore({ pod: { namespace: 'default', domain: '', search: ['default.svc.cluster.local'] }, now: () => Date.now() });
    await store.load(bytes, 'v1', 'nds');
    return store;
  };
  await build();
  const before = collect();
  const stores: TableStore[] = [];
  for (let copy = 0; copy < 5; copy++) stores.push(await build());
  const kept = (collect() - before) / stores.length;
  const names = stores[0]!.table!.size;
  console.log(
    `10,000-name table: ${(kept / 2 ** 20).toFixed(2)} MiB of heap kept (${Math.round(kept / names)} bytes a name, besides the NameTable's own ${(bytes.length / 2 ** 20).toFixed(2)} MiB off the heap; mean of ${stores.length} side by side) with ${names} names`,
  );
}

await retainedHeap();
await stallFigures();
const skip = await netnsSkipReason();
if (skip) console.log(`agent figures skipped: ${skip}`);
else await agentFigures();
