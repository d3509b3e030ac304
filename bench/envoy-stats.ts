/**
 * What Istio's stats inclusion list saves Envoy with many services: the
 * agent with its default bootstrap against the same agent keeping every stat
 * (`--statsInclusionRegexps '.*'`, what the bootstrap did before), alternating,
 * same run. SERVICES (default 3000) EDS clusters with an endpoint each and one
 * listener with a route per service. Reports Envoy's stat count, Envoy's RSS
 * once ready, and exec → first request through Envoy; median of RUNS (default 3).
 */
import { readFile } from 'node:fs/promises';
import { startAgent } from '../test/support/agent.ts';
import { startPeer } from '../test/support/peer.ts';
import { freePort } from '../test/support/ports.ts';
import { edsCluster, endpoints, httpListener } from '../test/support/resources.ts';
import { startUpstream } from '../test/support/upstream.ts';

const services = Number(process.env.SERVICES ?? 3000);
const runs = Number(process.env.RUNS ?? 3);
const upstream = await startUpstream('ok');
const listenerPort = await freePort();

function manyServices(): unknown[] {
  const names = Array.from({ length: services }, (_, i) => `outbound|80||svc-${i}.default.svc.cluster.local`);
  const route = {
    '@type': 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
    name: 'local_route',
    virtual_hosts: [{ name: 'all', domains: ['*'], routes: names.map((cluster, i) => ({ match: { prefix: `/svc-${i}/` }, route: { cluster } })) }],
  };
  return [httpListener('listener_0', listenerPort, 'local_route'), route, ...names.flatMap((name) => [edsCluster(name), endpoints(name, upstream.port)])];
}

const peer = await startPeer(manyServices());

async function firstRequest(): Promise<void> {
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${listenerPort}/svc-${services - 1}/`).then((r) => r.status).catch(() => 0);
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function once(args: string[]) {
  const start = performance.now();
  const agent = await startAgent({ discoveryAddress: peer.address, args });
  try {
    await firstRequest();
    const firstRequestMs = performance.now() - start;
    const stats = (await (await fetch(`http://127.0.0.1:${agent.adminPort}/stats`)).text()).split('\n').filter((line) => line.includes(':')).length;
    const status = await readFile(`/proc/${agent.envoyPids().at(-1)}/status`, 'utf8');
    const rssMiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]) / 1024;
    return { firstRequestMs, stats, rssMiB };
  } finally {
    await agent.stop();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const results = { istioList: [] as Awaited<ReturnType<typeof once>>[], everyStat: [] as Awaited<ReturnType<typeof once>>[] };
for (let i = 0; i < runs; i++) {
  results.istioList.push(await once([]));
  results.everyStat.push(await once(['--statsInclusionRegexps', '.*']));
}
await Promise.all([peer.stop(), upstream.close()]);

const summary = (list: Awaited<ReturnType<typeof once>>[]) => ({
  stats: median(list.map((r) => r.stats)),
  envoyRssMiB: +median(list.map((r) => r.rssMiB)).toFixed(1),
  firstRequestMs: Math.round(median(list.map((r) => r.firstRequestMs))),
});
const [istio, every] = [summary(results.istioList), summary(results.everyStat)];
console.log(
  JSON.stringify(
    {
      services,
      runs,
      istioInclusionList: istio,
      everyStatBaseline: every,
      ratios: {
        stats: +(istio.stats / every.stats).toFixed(4),
        envoyRss: +(istio.envoyRssMiB / every.envoyRssMiB).toFixed(2),
        firstRequest: +(istio.firstRequestMs / every.firstRequestMs).toFixed(2),
      },
    },
    null,
    2,
  ),
);
