/**
 * What one scrape of the merged metrics allocates on the agent's JS heap
 * (issue 44): the status server of this checkout and of `--baseline`
 * (default main, its src/ checked out in a temp worktree), each alone in a
 * child process under `--trace-gc-nvp` (the sum of its GCs' `allocated=`),
 * serving `--scrapes` gzip scrapes of a fake Envoy admin's `--kb` of stats
 * (Envoy-like lines) with the agent's real registry and runtime metrics.
 * The client and the fake Envoy run in this process, outside the count.
 *
 * Run: .tools/bin/node bench/scrape-churn.ts [--scrapes 200] [--kb 750] [--baseline main]
 */
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { http } from '../src/shared/node-http.ts';
import { nodeBin, repoRoot } from '../test/support/paths.ts';
import { buildRef } from './cost-build.ts';

const options = { scrapes: { type: 'string', default: '200' }, kb: { type: 'string', default: '750' }, baseline: { type: 'string', default: 'main' } } as const;
const { values } = parseArgs({ options });
const scrapes = Number(values.scrapes);

/** Envoy-like stats: a TYPE line per family, histograms' buckets, labelled counters. */
function envoyPage(kb: number): string {
  const lines: string[] = [];
  for (let family = 0; Buffer.byteLength(lines.join('\n')) < kb * 1024; family++) {
    const name = `envoy_cluster_upstream_cx_family_${family}`;
    lines.push(`# TYPE ${name} counter`);
    for (let cluster = 0; cluster < 40; cluster++) lines.push(`${name}{cluster_name="outbound|8080||svc-${cluster}.default.svc.cluster.local"} ${family * cluster}`);
  }
  return `${lines.join('\n')}\n`;
}

function scrape(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/stats/prometheus', headers: { 'accept-encoding': 'gzip' }, agent: false }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve(bytes));
    }).on('error', reject);
  });
}

/** Runs one build's status server in a child; the JS heap it allocated over the scrapes, and what of it survived into the old space, in bytes. */
async function measure(srcRoot: string, envoyPort: number): Promise<{ allocated: number; promoted: number }> {
  const child = execa(nodeBin, ['--trace-gc-nvp', '--max-semi-space-size=1', join(repoRoot, 'bench/scrape-churn-child.ts'), srcRoot, String(envoyPort)], {
    buffer: false, stdin: 'pipe', cwd: srcRoot,
  });
  let output = '';
  const port = await new Promise<number>((resolve) => child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    const found = /^PORT (\d+)$/m.exec(output);
    if (found) resolve(Number(found[1]));
  }));
  for (let warm = 0; warm < 20; warm++) await scrape(port);
  const start = output.length;
  for (let done = 0; done < scrapes; done++) await scrape(port);
  const measured = output.slice(start);
  child.kill('SIGTERM');
  await child.catch(() => undefined);
  const sum = (field: string) => [...measured.matchAll(new RegExp(` ${field}=(\\d+)`, 'g'))].reduce((total, match) => total + Number(match[1]), 0);
  return { allocated: sum('allocated'), promoted: sum('promoted') };
}

const page = envoyPage(Number(values.kb));
const envoy = createServer((_request, response) => response.end(page));
await new Promise<void>((resolve) => envoy.listen(0, '127.0.0.1', resolve));
const envoyPort = (envoy.address() as { port: number }).port;
const baseline = await buildRef(values.baseline);
try {
  const ours = await measure(repoRoot, envoyPort);
  const base = await measure(join(baseline.bin, '../..'), envoyPort);
  const perScrape = (bytes: number) => `${(bytes / scrapes / 2 ** 20).toFixed(2)} MiB`;
  console.log(`Envoy page ${(page.length / 1024).toFixed(0)} KB, ${scrapes} gzip scrapes; JS heap allocated per scrape:`);
  console.log(`  this checkout ${perScrape(ours.allocated)}, ${baseline.label} ${perScrape(base.allocated)}: ${(ours.allocated / base.allocated).toFixed(2)}x`);
  console.log(`  promoted to the old space: ${perScrape(ours.promoted)} vs ${perScrape(base.promoted)}: ${(ours.promoted / base.promoted).toFixed(2)}x`);
} finally {
  envoy.close();
  await baseline.remove();
}
