// The relay's throughput under Node flags: the relay child (keeping the last
// ACKed response, as the agent runs it) started plain and once per --variant
// (bench/cost-build.ts: 'LABEL: --flag NAME=VALUE ...'), side by side behind
// one control plane on loopback, where every hop is CPU-bound. Each push goes
// to every relay's client in turn, so all see the same machine; push-to-ACK
// p50 and p99 per size, and each variant's ratio to the plain relay.
// Run: .tools/bin/node bench/relay-flags.ts --variant SPEC [--variant SPEC ...] [--rounds 3] [--quick]
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { variantBuild } from './cost-build.ts';
import { median, percentile, ratio, round } from './figures.ts';
import { Plane, startRelay } from './xds-plane-client.ts';

const { values: flags } = parseArgs({
  options: { variant: { type: 'string', multiple: true, default: [] }, rounds: { type: 'string', default: '3' }, quick: { type: 'boolean' } },
});
const scale = flags.quick ? 0.2 : 1;
const sizes = [
  { label: '100 KB', bytes: 100_000, samples: 200 },
  { label: '1 MB', bytes: 1_000_000, samples: 60 },
  { label: '10 MB', bytes: 10_000_000, samples: 20 },
].map((size) => ({ ...size, samples: Math.max(3, Math.round(size.samples * scale)) }));
const contenders = [{ label: 'plain', nodeArgs: ['--disable-sigusr1'], env: {} as Record<string, string> }, ...flags.variant.map(variantBuild)];

const dir = await mkdtemp(join(tmpdir(), 'relay-flags-'));
const plane = new Plane();
const times = contenders.map(() => sizes.map(() => [] as number[]));
try {
  const port = await plane.port();
  const relays = await Promise.all(contenders.map((c, i) => startRelay(join(dir, `XDS-${i}`), '127.0.0.1', port, 'keep', { args: c.nodeArgs, env: c.env })));
  const clients = await Promise.all(contenders.map((_, i) => plane.connect(`unix://${join(dir, `XDS-${i}`)}`, `c${i}`)));
  for (let round = 0; round < Number(flags.rounds); round++) {
    for (const [s, size] of sizes.entries()) {
      for (const i of contenders.keys()) await plane.push(`c${i}`, size.bytes); // warm-up, not counted
      for (let n = 0; n < size.samples; n++) {
        // Rotate who goes first, so no relay always follows the same one.
        for (const k of contenders.keys()) { const i = (k + n) % contenders.length; times[i]![s]!.push(await plane.push(`c${i}`, size.bytes)); }
      }
    }
  }
  for (const client of clients) client.close();
  await Promise.all(relays.map((relay) => relay.stop()));
} finally {
  await plane.stop();
  await rm(dir, { recursive: true, force: true });
}

const figures = Object.fromEntries(sizes.map((size, s) => [size.label, Object.fromEntries(contenders.flatMap((c, i) => {
  const [p50, p99] = [median(times[i]![s]!), percentile(times[i]![s]!, 99)];
  const [b50, b99] = [median(times[0]![s]!), percentile(times[0]![s]!, 99)];
  return [
    [`${c.label} p50 ms`, round(p50)],
    [`${c.label} p99 ms`, round(p99)],
    ...(i === 0
      ? []
      : [
          [`${c.label} vs plain p50`, ratio(p50, b50)],
          [`${c.label} vs plain p99`, ratio(p99, b99)],
        ]),
  ];
}))]));
console.log(JSON.stringify({ loadAverage: loadavg().map((l) => Number(l.toFixed(2))), rounds: Number(flags.rounds), figures }, null, 2));
