/**
 * Where a status server's native memory goes under scrapes (issue 44): the
 * status server of this checkout (bench/scrape-churn-child.ts, the agent's
 * real registry and runtime metrics) alone in a child, started with the
 * shebang's memory flags and V8's memory saver (switched on after 2 s, as the
 * agent does at LIVE), under `--scrapes` back-to-back gzip scrapes of a fake
 * Envoy admin's `--kb` of stats. Prints the child's main malloc arena (the
 * brk `[heap]`) and its whole anonymous memory, from /proc/PID/smaps, every
 * sixth of the way; each `--variant 'LABEL: --flag ...'` (Node or V8 flags
 * added to the shebang's) is run `--runs` times, variants alternating.
 *
 * Run: .tools/bin/node bench/scrape-arena.ts [--scrapes 900] [--kb 40] [--runs 2] [--variant 'ncr: --no-concurrent-recompilation']
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { http } from '../src/shared/node-http.ts';
import { nodeBin, repoRoot } from '../test/support/paths.ts';

const { values } = parseArgs({
  options: {
    scrapes: { type: 'string', default: '900' },
    kb: { type: 'string', default: '40' },
    runs: { type: 'string', default: '2' },
    variant: { type: 'string', multiple: true, default: [] },
  },
});
const scrapes = Number(values.scrapes);
/** The shebang's flags, without --no-concurrent-recompilation: `shipped` adds it back as a variant. */
const baseFlags = ['--max-semi-space-size=1', '--v8-pool-size=1'];
const memorySaver = `data:text/javascript,${encodeURIComponent("import { setFlagsFromString } from 'node:v8'; setTimeout(() => setFlagsFromString('--memory-saver-mode'), 2000).unref();")}`;

function envoyPage(kb: number): string {
  const lines: string[] = [];
  for (let family = 0; lines.length * 90 < kb * 1024; family++) {
    const name = `envoy_cluster_upstream_cx_family_${family}`;
    lines.push(`# TYPE ${name} counter`);
    for (let cluster = 0; cluster < 40; cluster++) lines.push(`${name}{cluster_name="outbound|8080||svc-${cluster}.default.svc.cluster.local"} ${family * cluster}`);
  }
  return `${lines.join('\n')}\n`;
}

const scrape = (port: number) =>
  new Promise<void>((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/stats/prometheus', headers: { 'accept-encoding': 'gzip' }, agent: false }, (response) => {
      response.resume();
      response.on('end', resolve);
    }).on('error', reject);
  });

/** The brk heap's and all anonymous memory, in MB. */
function anonymous(pid: number): { heap: number; anon: number } {
  let heap = 0;
  let anon = 0;
  let mapping = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) mapping = line;
    else if (line.startsWith('Anonymous:')) {
      const kb = Number(line.split(/\s+/)[1]);
      anon += kb;
      if (mapping.endsWith('[heap]')) heap += kb;
    }
  }
  return { heap: heap / 1024, anon: anon / 1024 };
}

async function measure(flags: string[], envoyPort: number): Promise<string> {
  const child = execa(nodeBin, [...baseFlags, ...flags, '--import', memorySaver, join(repoRoot, 'bench/scrape-churn-child.ts'), repoRoot, String(envoyPort)], {
    buffer: false, cwd: repoRoot, env: { MALLOC_ARENA_MAX: '2' },
  });
  try {
    let output = '';
    const port = await new Promise<number>((resolve) => child.stdout!.on('data', (chunk: Buffer) => {
      const found = /^PORT (\d+)$/m.exec((output += chunk.toString()));
      if (found) resolve(Number(found[1]));
    }));
    const row: string[] = [];
    for (let done = 0; done <= scrapes; done++) {
      if (done % Math.ceil(scrapes / 6) === 0 || done === scrapes) {
        const { heap, anon } = anonymous(child.pid!);
        row.push(`${done}: ${heap.toFixed(1)}/${anon.toFixed(1)}`);
      }
      if (done < scrapes) await scrape(port);
    }
    return row.join('  ');
  } finally {
    child.kill('SIGTERM');
    await child.catch(() => undefined);
  }
}

const variants = [{ label: 'without', flags: [] as string[] }, { label: 'shipped', flags: ['--no-concurrent-recompilation'] }];
for (const spec of values.variant) {
  const colon = spec.indexOf(':');
  variants.push({ label: spec.slice(0, colon), flags: spec.slice(colon + 1).split(/\s+/).filter(Boolean) });
}
const page = envoyPage(Number(values.kb));
const envoy = createServer((_request, response) => response.end(page));
await new Promise<void>((resolve) => envoy.listen(0, '127.0.0.1', resolve));
try {
  console.log(`${scrapes} gzip scrapes back to back, Envoy page ${(page.length / 1024).toFixed(0)} KB; scrapes: brk heap MB / anonymous MB`);
  for (let run = 0; run < Number(values.runs); run++) {
    for (const variant of variants) console.log(`${variant.label} ${variant.flags.join(' ')} | ${await measure(variant.flags, (envoy.address() as { port: number }).port)}`);
  }
} finally {
  envoy.close();
}
