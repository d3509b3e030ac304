// The churn kinds of bench/soak.ts, each a loop that stops at a deadline (or
// at stop()), and the sampler that reads what a pod's agent holds every 10 s.
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { requestThroughCapture, type Mesh, type Pod } from '../test/support/pods.ts';
import { edsCluster, endpoints } from '../test/support/resources.ts';
import { memory } from './cost-proc.ts';

export const churnKinds = ['pushes', 'scrapes', 'rotations', 'requests'] as const;
export type ChurnKind = (typeof churnKinds)[number];

/** Certificates live 30 s and are renewed with 20 % of it left: a rotation every 6 s, in both agents (same rule: issue time + (1 − ratio) × TTL). */
export const rotation = { ttlSeconds: 30, env: { SECRET_GRACE_PERIOD_RATIO: '0.8', SECRET_GRACE_PERIOD_RATIO_JITTER: '0' } };

export interface Counts { pushes: number; scrapes: number; scrapeFailures: number; requests: number; failed: number }
export const noCounts = (): Counts => ({ pushes: 0, scrapes: 0, scrapeFailures: 0, requests: 0, failed: 0 });

/** One loop per kind (per pod for scrapes and requests), all bounded by `until` (performance.now()). */
export function startChurn(kinds: ChurnKind[], mesh: Mesh, pods: Pod[], until: number): { counts: Map<Pod, Counts>; stop(): Promise<void> } {
  const counts = new Map(pods.map((pod) => [pod, noCounts()]));
  const state = { running: true };
  const live = () => state.running && performance.now() < until;
  const loops: Promise<void>[] = [];
  if (kinds.includes('pushes')) loops.push(pushLoop(mesh, pods, counts, live));
  for (const pod of pods) {
    if (kinds.includes('scrapes')) loops.push(scrapeLoop(pod, counts.get(pod)!, live));
    if (kinds.includes('requests')) loops.push(requestLoop(pod, counts.get(pod)!, live));
  }
  // Rotations need no loop: the CA's short lifetime and the pods' grace ratio drive them (see `rotation`).
  return { counts, stop: async () => { state.running = false; await Promise.all(loops); } };
}

/** The base config and `count` more services (an EDS cluster and its endpoints each), as a mesh's istiod sends. */
export const withServices = (base: unknown[], count: number): unknown[] => [
  ...base,
  ...Array.from({ length: count }, (_, i) => `outbound|8080||svc-${i}.default.svc.cluster.local`).flatMap((name) => [edsCluster(name), endpoints(name, 8080)]),
];

/** A ServiceEntry's worth of config (an EDS cluster and its endpoints), a new name each time, added, then removed 3 s later. */
async function pushLoop(mesh: Mesh, pods: Pod[], counts: Map<Pod, Counts>, live: () => boolean): Promise<void> {
  for (let n = 0; live(); n++) {
    const name = `outbound|80||se-${n >> 1}.soak.example`;
    await mesh.peer.setResources(n % 2 === 0 ? [...mesh.resources, edsCluster(name), endpoints(name, 80)] : mesh.resources);
    for (const pod of pods) counts.get(pod)!.pushes++;
    await sleep(3000);
  }
  await mesh.peer.setResources(mesh.resources);
}

async function scrapeLoop(pod: Pod, counts: Counts, live: () => boolean): Promise<void> {
  while (live()) {
    counts.scrapes++;
    const ok = await fetch(`http://${pod.ip}:15020/stats/prometheus`, { signal: AbortSignal.timeout(5000) }).then(
      async (response) => (await response.arrayBuffer(), response.status === 200),
      () => false,
    );
    if (!ok) counts.scrapeFailures++;
    await sleep(500);
  }
}

/** A new TLS connection each time, as a client pod's calls come. */
async function requestLoop(pod: Pod, counts: Counts, live: () => boolean): Promise<void> {
  while (live()) {
    counts.requests++;
    if (!(await requestThroughCapture(pod, 2000))) counts.failed++;
    await sleep(200);
  }
}

export interface Sample {
  /** Seconds since the churn started (negative while idle). */
  t: number;
  anonMb: number;
  pssMb: number;
  /** V8's heap used (nodejs_heap_size_used_bytes) or Go's heap in use (go_memstats_heap_inuse_bytes), from the agent's 15020. */
  heapMb: number | undefined;
  /** Ours only: V8's heap committed, and the memory of Buffers outside it (nodejs_heap_size_total_bytes, nodejs_external_memory_bytes). */
  heapTotalMb: number | undefined;
  externalMb: number | undefined;
  fds: number;
  threads: number;
  /** A request through Envoy at each sample, so every churn shows whether the pod still serves. */
  probeOk: boolean;
}

const gauge = (text: string, ...names: string[]) => {
  const match = new RegExp(`^(?:\\w*_)?(?:${names.join('|')})(?:\\{[^}]*\\})? ([\\d.e+]+)$`, 'm').exec(text);
  return match ? Number(match[1]) / 2 ** 20 : undefined;
};

/** The agent's heap as its own metrics say (one scrape: only with --heap). */
async function heapFigures(pod: Pod): Promise<Pick<Sample, 'heapMb' | 'heapTotalMb' | 'externalMb'>> {
  const text = await fetch(`http://${pod.ip}:15020/stats/prometheus`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text(), () => '');
  return {
    heapMb: gauge(text, 'nodejs_heap_size_used_bytes', 'go_memstats_heap_inuse_bytes'),
    heapTotalMb: gauge(text, 'nodejs_heap_size_total_bytes'),
    externalMb: gauge(text, 'nodejs_external_memory_bytes'),
  };
}

const fdCount = (pid: number) => { try { return readdirSync(`/proc/${pid}/fd`).length; } catch { return 0; } };

export async function sample(pod: Pod, t: number, withHeap: boolean): Promise<Sample> {
  const m = memory(pod.agentPid);
  const none = { heapMb: undefined, heapTotalMb: undefined, externalMb: undefined };
  const [heap, probeOk] = await Promise.all([withHeap ? heapFigures(pod) : none, requestThroughCapture(pod, 2000)]);
  return { t, anonMb: m.rssAnonMb, pssMb: m.pssMb, ...heap, fds: fdCount(pod.agentPid), threads: m.threads, probeOk };
}

/** Least-squares slope of y over t (per second). */
export function slope(points: { t: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const meanT = points.reduce((s, p) => s + p.t, 0) / n;
  const meanY = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.t - meanT) * (p.y - meanY), 0);
  const den = points.reduce((s, p) => s + (p.t - meanT) ** 2, 0);
  return den === 0 ? Number.NaN : num / den;
}
