// `npm run bench`: every benchmark in turn, each in its own process so one
// cannot warm or load the machine for the next. Extra arguments (e.g.
// --quick) are passed to each.
import { execaNode } from 'execa';

const benchmarks = [
  'startup.ts',
  'cert-rotation.ts',
  'sds-rotation.ts',
  'envoy-stats.ts',
  'xds-relay.ts',
  'xds-last-known-good.ts',
  'wasm-remote-load.ts',
  'status-metrics.ts',
  'dns.ts',
  'cost.ts',
  'soak.ts',
];
const args = process.argv.slice(2);

for (const name of benchmarks) {
  console.log(`\n== bench/${name}`);
  const result = await execaNode(new URL(name, import.meta.url).pathname, args, { stdio: 'inherit', reject: false });
  if (result.exitCode !== 0) {
    console.error(`bench/${name} failed (exit ${result.exitCode})`);
    process.exitCode = 1;
  }
}
