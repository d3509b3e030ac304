/**
 * The status server's /stats/prometheus costs, as ratios against baselines
 * measured in the same run:
 * - merging the agent's and Envoy's text (dropping repeated HELP/TYPE) vs
 *   encoding the two to bytes, which serving them needs anyway;
 * - reading Envoy's body with the 32 MiB cap vs an uncapped `fetch().text()`.
 * Loopback only; bounded rounds.
 */
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { mergePrometheus } from '../src/status/metadata-filter.ts';
import { envoyMetricsCapBytes, fetchCapped } from '../src/status/prometheus.ts';

const families = 20_000;
const rounds = 15;

/** Envoy-like output: one TYPE line and five labelled samples per family, ~10 MiB. */
function envoyText(): string {
  const parts: string[] = [];
  for (let family = 0; family < families; family++) {
    const name = `envoy_cluster_upstream_rq_family_${family}`;
    parts.push(`# TYPE ${name} counter\n`);
    for (let cluster = 0; cluster < 5; cluster++)
      parts.push(`${name}{envoy_cluster_name="outbound|8080||svc-${cluster}.default.svc.cluster.local"} ${family * cluster}\n`);
  }
  return parts.join('');
}

const agentText =
  '# HELP istio_agent_epochs_started_total Envoy epochs started\n# TYPE istio_agent_epochs_started_total counter\nistio_agent_epochs_started_total 1\n';

/** Median milliseconds of `rounds` runs after one warm-up. */
async function median(run: () => unknown): Promise<number> {
  await run();
  const times: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

async function main(): Promise<void> {
  const envoy = envoyText();
  const mib = Buffer.byteLength(envoy) / 2 ** 20;
  let sink = 0;
  const encode = await median(() => (sink += Buffer.from(agentText + envoy).length));
  const merge = await median(() => (sink += mergePrometheus(agentText, envoy).length));
  const server = createServer((_request, response) => response.end(envoy));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/stats/prometheus`;
  const plain = await median(async () => (sink += (await (await fetch(url)).text()).length));
  const capped = await median(async () => {
    const result = await fetchCapped(url, { capBytes: envoyMetricsCapBytes, timeoutMs: 30_000 });
    sink += result.ok ? result.text.length : 0;
  });
  server.closeAllConnections();
  server.close();
  console.log(`Envoy part: ${mib.toFixed(1)} MiB, ${families} families; medians of ${rounds} rounds (sink ${sink > 0})`);
  console.log(
    `merge (dedupe HELP/TYPE)   ${merge.toFixed(1)} ms  = ${(merge / encode).toFixed(1)}x encoding to bytes (${encode.toFixed(1)} ms), ${(mib / (merge / 1000)).toFixed(0)} MiB/s`,
  );
  console.log(`capped read over loopback  ${capped.toFixed(1)} ms  = ${(capped / plain).toFixed(2)}x uncapped fetch().text() (${plain.toFixed(1)} ms)`);
}

await main();
