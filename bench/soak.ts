// Day two (issue 44): does the agent's memory stay flat under weeks of churn?
// One pod per build on one mesh (test/support/pods.ts: the discovery peer and
// the CA peer stand in for istiod), each agent started through its shebang as
// the image starts it. Per churn kind, on a fresh mesh: 1 min idle (the idle
// figure: median anonymous RSS), then --minutes of churn:
//   pushes     an EDS cluster and its endpoints (a ServiceEntry's worth, a new
//              name each time) added, then removed 3 s later, again and again
//   scrapes    GET :15020/stats/prometheus every 0.5 s
//   rotations  certificates of 30 s renewed with 20 % left: one every 6 s
//              (these run from the start: the idle minute rotates too)
//   requests   a request through the capture and Envoy every 0.2 s, new TLS connection each
//   all        all of them at once
//   idle       none (a control: what the agent does on its own over the same time)
// Every 10 s: the agent's RssAnon and PSS (/proc), fds, threads and one probe
// request through Envoy; with --heap also its heap (V8's heap used and
// committed and Buffers' external memory, or Go's heap in use for Istio's
// agent) from its own 15020 metrics: a scrape every 10 s is churn itself
// (main grows under it: see docs/benchmarks.md), so a verdict run goes without. Printed: the least-squares slope after a 2 min
// warm-up, in MB per 30 min, and the last minute's and the highest anonymous
// RSS as ratios of the idle figure. Done means a slope ≤ 1 MB/30 min and ≤ 1.5× idle.
// Builds: this checkout, --baseline REF (a git ref built into a temp
// worktree, repeatable; none by default), --agent LABEL=PATH (a built entry point, e.g.
// a copy of main's bin/ and dist/; repeatable), --variant 'LABEL: --flag NAME=VALUE' (this
// checkout under other Node flags and env, bench/cost-build.ts), --istio-agent PATH (bench/istio-agent.ts).
// --delta: ISTIO_DELTA_XDS=true in every pod (Istio's default; ours is SotW).
// --services N: N more EDS clusters with their endpoints in the base config, so
// that a SotW push carries a mesh's worth of clusters as istiod's do (default 0).
// --heapsnapshots DIR: our agents write a V8 heap snapshot into DIR at the end
// of the idle minute, half-way and at the end (SIGUSR2), to compare retained objects
// (bench/heap-diff.ts); writing one costs the agent ~70 MB of RSS it keeps, so such a run's memory figures mean nothing.
// Run: .tools/bin/node bench/soak.ts [--churn pushes ...|all] [--minutes 30] [--baseline main] [--istio-agent PATH] [--delta] [--out FILE]
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { makePodNamespace, podSkipReason, startMesh, startPodAgent, untilPodReady, type Pod } from '../test/support/pods.ts';
import { buildRef, currentBuild, variantBuild } from './cost-build.ts';
import { median, ratio, round } from './figures.ts';
import { istioBuild, type Contender } from './istio-agent.ts';
import { churnKinds, rotation, sample, slope, startChurn, withServices, type ChurnKind, type Counts, type Sample } from './soak-churn.ts';

const { values: flags } = parseArgs({
  options: {
    churn: { type: 'string', multiple: true, default: [] },
    minutes: { type: 'string', default: '30' },
    'idle-minutes': { type: 'string', default: '1' },
    'warmup-minutes': { type: 'string', default: '2' },
    baseline: { type: 'string', multiple: true, default: [] },
    agent: { type: 'string', multiple: true, default: [] },
    variant: { type: 'string', multiple: true, default: [] },
    'istio-agent': { type: 'string' },
    delta: { type: 'boolean' },
    heap: { type: 'boolean', default: false },
    heapsnapshots: { type: 'string' },
    out: { type: 'string' },
    quick: { type: 'boolean' },
    services: { type: 'string', default: '0' },
  },
  allowNegative: true,
});
// --quick (npm run bench): all the churn at once for 3 min, 1 min warm-up; a smoke run, not a verdict.
const minutes = flags.quick ? 3 : Number(flags.minutes);
const idleS = Number(flags['idle-minutes']) * 60;
const warmupS = (flags.quick ? 1 : Number(flags['warmup-minutes'])) * 60;
const sampleMs = 10_000;

/** Each kind alone, then all (no --churn); or the listed runs ('all' is every kind at once). */
function churnRuns(): { label: string; kinds: ChurnKind[] }[] {
  const asked = flags.churn.length > 0 ? flags.churn : flags.quick ? ['all'] : [...churnKinds, 'all'];
  return asked.map((label) => {
    if (label === 'all') return { label, kinds: [...churnKinds] };
    if (label === 'idle') return { label, kinds: [] };
    if (!(churnKinds as readonly string[]).includes(label)) throw new Error(`--churn ${label}: expected one of ${churnKinds.join(', ')}, all, idle`);
    return { label, kinds: [label as ChurnKind] };
  });
}

interface Run { build: Contender; pod: Pod; samples: Sample[] }

function podEnv(build: Contender, kinds: ChurnKind[]): Record<string, string> {
  return {
    ...build.env,
    ...(kinds.includes('rotations') ? rotation.env : {}),
    ...(flags.delta ? { ISTIO_DELTA_XDS: 'true' } : {}),
    ...(flags.heapsnapshots && !build.foreign ? { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${flags.heapsnapshots}` } : {}),
  };
}

async function sampleAll(runs: Run[], t: number): Promise<void> {
  const samples = await Promise.all(runs.map((run) => sample(run.pod, t, flags.heap)));
  samples.forEach((s, i) => runs[i]!.samples.push(s));
}

/** Samples every 10 s from `from` to `until` (s since the churn's start). */
async function sampleUntil(runs: Run[], churnStart: number, untilS: number): Promise<void> {
  for (;;) {
    const t = (performance.now() - churnStart) / 1000;
    if (t >= untilS) return;
    await sampleAll(runs, t);
    const next = Math.ceil(((performance.now() - churnStart) / 1000 + 0.001) / (sampleMs / 1000)) * (sampleMs / 1000);
    await sleep(Math.max(0, Math.min(next, untilS) * 1000 - (performance.now() - churnStart)));
  }
}

const snapshot = (runs: Run[]) => { for (const run of runs) if (!run.build.foreign) process.kill(run.pod.agentPid, 'SIGUSR2'); };

function progress(label: string, runs: Run[]): void {
  const last = runs.map((run) => `${run.build.label}: ${round(run.samples.at(-1)?.anonMb ?? Number.NaN)} MB`).join(', ');
  console.error(`[soak ${label}] t=${round(runs[0]!.samples.at(-1)?.t ?? 0)} s anon ${last}`);
}

async function churnPhase(label: string, kinds: ChurnKind[], runs: Run[], mesh: Awaited<ReturnType<typeof startMesh>>) {
  const churnStart = performance.now();
  const churn = startChurn(kinds, mesh, runs.map((run) => run.pod), churnStart + minutes * 60_000);
  try {
    for (let minute = 1; minute <= minutes; minute++) {
      await sampleUntil(runs, churnStart, minute * 60);
      progress(label, runs);
      if (flags.heapsnapshots && minute === Math.floor(minutes / 2)) snapshot(runs);
    }
    await sampleAll(runs, (performance.now() - churnStart) / 1000);
    if (flags.heapsnapshots) snapshot(runs);
  } finally {
    await churn.stop();
  }
  return churn.counts;
}

async function scenario(label: string, kinds: ChurnKind[], builds: Contender[]) {
  const mesh = await startMesh();
  const namespaces: Awaited<ReturnType<typeof makePodNamespace>>[] = [];
  const runs: Run[] = [];
  try {
    if (kinds.includes('rotations')) await mesh.ca.setMode({ ttlSeconds: rotation.ttlSeconds });
    if (Number(flags.services) > 0) await mesh.peer.setResources((mesh.resources = withServices(mesh.resources, Number(flags.services))));
    for (const [index, build] of builds.entries()) {
      const netns = await makePodNamespace(mesh, index);
      namespaces.push(netns);
      const { bin, foreign, viaShebang, nodeArgs } = build;
      const pod = await startPodAgent(mesh, netns, index, { bin, foreign, viaShebang, nodeArgs, env: podEnv(build, kinds) });
      runs.push({ build, pod, samples: [] });
      await untilPodReady(pod, 120_000, 50);
    }
    const idleStart = performance.now() + idleS * 1000;
    await sampleUntil(runs, idleStart, 0);
    if (flags.heapsnapshots) snapshot(runs);
    const counts = await churnPhase(label, kinds, runs, mesh);
    // Every pod's certificates together (one identity for all pods).
    const issued = mesh.ca.log.entries.filter((entry) => entry.event === 'request' && entry.serial).length;
    return runs.map((run) => ({ run, counts: counts.get(run.pod)!, certificatesIssuedInMesh: issued }));
  } finally {
    await Promise.all(runs.map((run) => run.pod.stop()));
    for (const netns of namespaces) await netns.remove();
    await mesh.close();
  }
}

const perMb30 = (perS: number) => round(perS * 1800);

function figures(result: { run: Run; counts: Counts; certificatesIssuedInMesh: number }) {
  const { samples } = result.run;
  const idle = median(samples.filter((s) => s.t < 0).map((s) => s.anonMb));
  const after = samples.filter((s) => s.t >= warmupS);
  const lastMinute = median(after.filter((s) => s.t >= after.at(-1)!.t - 60).map((s) => s.anonMb));
  const fit = (pick: (s: Sample) => number | undefined) =>
    perMb30(slope(after.flatMap((s) => (pick(s) === undefined ? [] : [{ t: s.t, y: pick(s)! }]))));
  return {
    idleAnonMb: round(idle), endAnonMb: round(lastMinute), maxAnonMb: round(Math.max(...after.map((s) => s.anonMb))),
    anonMbPer30min: fit((s) => s.anonMb), pssMbPer30min: fit((s) => s.pssMb), heapMbPer30min: fit((s) => s.heapMb),
    heapTotalMbPer30min: fit((s) => s.heapTotalMb), externalMbPer30min: fit((s) => s.externalMb),
    endToIdle: ratio(lastMinute, idle), maxToIdle: ratio(Math.max(...after.map((s) => s.anonMb)), idle),
    fds: `${samples[0]!.fds} → ${samples.at(-1)!.fds}`, threads: `${samples[0]!.threads} → ${samples.at(-1)!.threads}`,
    probesFailed: samples.filter((s) => !s.probeOk).length, ...result.counts, certificatesIssuedInMesh: result.certificatesIssuedInMesh,
  };
}

const skip = await podSkipReason();
if (skip) {
  console.log(JSON.stringify({ skipped: skip }));
  process.exit(0);
}
if (flags.heapsnapshots) {
  await mkdir(flags.heapsnapshots, { recursive: true });
  await chmod(flags.heapsnapshots, 0o777); // the agents run as uid 1337
}
const builds: Contender[] = [currentBuild()];
for (const ref of flags.baseline) builds.push(await buildRef(ref));
for (const spec of flags.agent) {
  const at = spec.indexOf('=');
  builds.push({ label: spec.slice(0, at), bin: spec.slice(at + 1), viaShebang: true, remove: async () => {} });
}
for (const spec of flags.variant) builds.push(variantBuild(spec));
if (flags['istio-agent']) builds.push(istioBuild(flags['istio-agent']));
const report: Record<string, unknown> = { minutes, idleMinutes: idleS / 60, warmupMinutes: warmupS / 60, delta: flags.delta ?? false };
const raw: Record<string, Record<string, Sample[]>> = {};
try {
  for (const { label, kinds } of churnRuns()) {
    const results = await scenario(label, kinds, builds);
    report[label] = Object.fromEntries(results.map((result) => [result.run.build.label, figures(result)]));
    raw[label] = Object.fromEntries(results.map((result) => [result.run.build.label, result.run.samples]));
    console.error(JSON.stringify({ [label]: report[label] }));
    if (flags.out) await writeFile(flags.out, JSON.stringify({ report, samples: raw }));
  }
} finally {
  for (const build of builds) await build.remove();
}
console.log(JSON.stringify(report, null, 2));
