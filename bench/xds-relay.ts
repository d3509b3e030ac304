// Push-to-ACK latency through the xDS relay vs a direct connection, and the
// relay's memory while its client is stalled during 50 MB pushes. The relay
// runs twice side by side: as shipped (keeping the last ACKed response for
// last-known-good) and with keeping off, the relay as it was before: the
// baseline for what keeping costs in latency and memory. A third relay runs
// as the agent does by default, keeping and with Wasm remote load conversion,
// its client having asked for ECDS (so every response is looked at for its
// type): against `keep`, what the ECDS interception costs other responses.
// A fourth (`idle`) is the same relay whose client never asks for ECDS, as
// for an Envoy without Wasm plugins: only the frames are followed.
// The control plane, the relay and the clients each run in their own process;
// direct and relayed pushes alternate, so both see the same machine state.
// Two placements of the control plane: on loopback, where every hop is
// CPU-bound and the relay's own cost shows in full; and behind a shaped
// 1 Gbit/s link (a network namespace), as istiod is in a mesh.
// Run: .tools/bin/node bench/xds-relay.ts [--quick]
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shapedLink } from './shaped-link.ts';
import { Plane, startRelay } from './xds-plane-client.ts';

const quick = process.argv.includes('--quick');
const sizes = [
  { label: '1 KB', bytes: 1_000, samples: quick ? 100 : 1000 },
  { label: '10 KB', bytes: 10_000, samples: quick ? 100 : 1000 },
  { label: '100 KB', bytes: 100_000, samples: quick ? 50 : 500 },
  { label: '1 MB', bytes: 1_000_000, samples: quick ? 20 : 100 },
  { label: '10 MB', bytes: 10_000_000, samples: quick ? 5 : 30 },
  { label: '50 MB', bytes: 50_000_000, samples: quick ? 3 : 15 },
];

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Push-to-ACK per size: direct, through the relay without keeping (baseline), with it, and with Wasm conversion armed. */
async function latencies(plane: Plane, direct: string, plain: string, keeping: string, wasm: string): Promise<void> {
  const names = ['direct', 'nokeep', 'keep', 'wasm', 'idle'] as const;
  const clients = [
    await plane.connect(direct, 'direct'),
    await plane.connect(plain, 'nokeep'),
    await plane.connect(keeping, 'keep'),
    await plane.connect(wasm, 'wasm', true, true),
    await plane.connect(wasm, 'idle'),
  ];
  console.log(
    'size    | direct p50 | direct p99 | relay p50 | relay p99 | keep p50 | keep p99 | wasm p50 | wasm p99 | relay/direct p50 | keep/direct p50 | keep/relay p50 | keep/relay p99 | wasm/keep p50 | wasm/keep p99 | idle/keep p50 | idle/keep p99',
  );
  for (const size of sizes) {
    for (const name of names) await plane.push(name, size.bytes); // warm-up, not counted
    const times = { direct: [] as number[], nokeep: [] as number[], keep: [] as number[], wasm: [] as number[], idle: [] as number[] };
    for (let i = 0; i < size.samples; i++) {
      for (const name of names) times[name].push(await plane.push(name, size.bytes));
    }
    const [d50, d99, r50, r99, k50, k99, w50, w99, i50, i99] = names.flatMap((name) => [percentile(times[name], 50), percentile(times[name], 99)]) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const cells = [d50, d99, r50, r99, k50, k99, w50, w99].map((value) => value.toFixed(2).padStart(9));
    const ratios = [r50 / d50, k50 / d50, k50 / r50, k99 / r99, w50 / k50, w99 / k99, i50 / k50, i99 / k99].map((value) => `${value.toFixed(2).padStart(14)}×`);
    console.log(`${size.label.padEnd(7)} | ${cells.join(' | ')} | ${ratios.join(' | ')}`);
  }
  for (const client of clients) client.close();
}

/** Relay RSS while the client reads nothing and three 50 MB responses are pushed. */
async function stalledMemory(plane: Plane, target: string, pid: number, name: string): Promise<{ before: number; peak: number }> {
  const client = await plane.connect(target, name, false, name.endsWith('wasm'));
  client.stream.pause();
  const before = rssMiB(pid);
  let peak = before;
  for (let i = 0; i < 3; i++) await plane.push(name, 50_000_000, false);
  for (let i = 0; i < 60; i++) {
    peak = Math.max(peak, rssMiB(pid));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  client.close();
  return { before, peak };
}

/** One placement of the control plane: latencies, then (on loopback) memory. */
async function scenario(title: string, dir: string, plane: Plane, host: string, options: { memory: boolean }): Promise<void> {
  console.log(`\n${title}`);
  const port = await plane.port();
  const sockets = { nokeep: join(dir, 'XDS-nokeep'), keep: join(dir, 'XDS-keep'), wasm: join(dir, 'XDS-wasm') };
  const relays = {
    nokeep: await startRelay(sockets.nokeep, host, port, 'nokeep'),
    keep: await startRelay(sockets.keep, host, port, 'keep'),
    wasm: await startRelay(sockets.wasm, host, port, 'wasm'),
  };
  await latencies(plane, `${host}:${port}`, `unix://${sockets.nokeep}`, `unix://${sockets.keep}`, `unix://${sockets.wasm}`);
  if (options.memory)
    console.log(
      `relay RSS after the pushes (last ACKed: one 50 MB response): ${rssMiB(relays.nokeep.pid).toFixed(0)} MiB without keeping, ${rssMiB(relays.keep.pid).toFixed(0)} MiB keeping it, ${rssMiB(relays.wasm.pid).toFixed(0)} MiB keeping it with Wasm conversion armed`,
    );
  await Promise.all([relays.nokeep.stop(), relays.keep.stop(), relays.wasm.stop()]);
  if (!options.memory) return;
  for (const keep of ['nokeep', 'keep', 'wasm'] as const) {
    const fresh = await startRelay(sockets[keep], host, port, keep);
    const memory = await stalledMemory(plane, `unix://${sockets[keep]}`, fresh.pid, `stalled-${keep}`);
    await fresh.stop();
    const grown = memory.peak - memory.before;
    console.log(
      `relay RSS with a stalled client, 3 × 50 MB pushed (${keep === 'keep' ? 'keeping' : keep === 'wasm' ? 'keeping, Wasm conversion armed' : 'baseline, no keeping'}): ${memory.before.toFixed(0)} MiB before, ${memory.peak.toFixed(0)} MiB peak (+${grown.toFixed(0)} MiB = ${(grown / 47.7).toFixed(2)} × one response)`,
    );
  }
}

const dir = await mkdtemp(join(tmpdir(), 'xds-bench-'));
console.log(`xDS push-to-ACK in ms: grpc-js ADS client that ACKs; control plane, relay and client in separate processes${quick ? ' (quick)' : ''}`);
try {
  const local = new Plane();
  await scenario('control plane on loopback', dir, local, '127.0.0.1', { memory: true }).finally(() => local.stop());
  const link = await shapedLink('1gbit');
  if (link) {
    const remote = new Plane(link.host, link.exec);
    await scenario('control plane behind a 1 Gbit/s link (veth to a network namespace, tbf)', dir, remote, link.host, { memory: false }).finally(
      async () => (await remote.stop(), await link.close()),
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
