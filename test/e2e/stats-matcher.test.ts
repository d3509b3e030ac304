import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { agentBin, nodeBin } from '../support/paths.ts';
import { assertGone } from '../support/agent.ts';
import { epochLive } from '../support/tls-rig.ts';
import { startSdsRig } from '../support/sds-rig.ts';

const statNames = async (adminPort: number) =>
  (await (await fetch(`http://127.0.0.1:${adminPort}/stats`)).text()).split('\n').map((line) => line.split(':')[0]!);

describe('Envoy keeps Istio\'s default stats only, extendable', () => {
  for (const [label, args, kept] of [
    ['by default', [], false],
    ['with --statsInclusionPrefixes', ['--statsInclusionPrefixes', 'cluster.upstream.'], true],
  ] as const) {
    it(`per-cluster stats of a mesh cluster ${kept ? 'are kept' : 'are not created'} ${label}`, { timeout: 60_000 }, async () => {
      const rig = await startSdsRig([...args]);
      try {
        await epochLive(rig.agent, 0);
        const names = await statNames(rig.agent.adminPort);
        // `xds-grpc;`: the bootstrap's clusters carry Istio's alt_stat_name, which its cluster_name tag reads.
        for (const required of [
          'server.state',
          'listener_manager.workers_started',
          'cluster_manager.cds.update_success',
          'cluster.xds-grpc;.upstream_cx_total',
        ]) {
          assert.ok(names.includes(required), `${required} is kept (readiness and the xDS cluster need it)`);
        }
        assert.equal(
          names.some((name) => name.startsWith('cluster.upstream.')),
          kept,
          names
            .filter((name) => name.startsWith('cluster.'))
            .slice(0, 5)
            .join(', '),
        );
        assert.equal(names.some((name) => name.startsWith('http.ingress_http.')), false, 'listener HTTP stats are not created');
      } finally {
        await rig.close();
        await assertGone(rig.agent.envoyPids());
      }
    });
  }

  it('takes additions from the sidecar.istio.io annotations, flags winning, {pod_ip} being the node\'s IP', { timeout: 30_000 }, async () => {
    const render = async (args: string[]) => {
      const printed = await execa(nodeBin, [agentBin, 'proxy', 'sidecar', '--serviceregistry', 'Other', '--ip', '198.19.1.3', '--print-bootstrap', ...args], {
        env: {
          ISTIO_METAJSON_ANNOTATIONS: JSON.stringify({
            'sidecar.istio.io/statsInclusionPrefixes': 'http.{pod_ip}_,upstream_rq',
            'sidecar.istio.io/statsInclusionSuffixes': 'upstream_cx_total',
          }),
        },
      });
      return (
        JSON.parse(printed.stdout) as { stats_config: { stats_matcher: { inclusion_list: { patterns: unknown[] } } } }
      ).stats_config.stats_matcher.inclusion_list.patterns.map((pattern) => JSON.stringify(pattern));
    };
    const fromAnnotations = await render([]);
    for (const expected of [{ prefix: 'http.198.19.1.3_' }, { prefix: 'upstream_rq' }, { suffix: 'upstream_cx_total' }, { prefix: 'server' }])
      assert.ok(fromAnnotations.includes(JSON.stringify(expected)), JSON.stringify(expected));
    const fromFlag = await render(['--statsInclusionPrefixes', 'cluster.outbound']);
    assert.ok(
      fromFlag.includes(JSON.stringify({ prefix: 'cluster.outbound' })) && !fromFlag.includes(JSON.stringify({ prefix: 'upstream_rq' })),
      'the flag replaces the annotation',
    );
    assert.ok(fromFlag.includes(JSON.stringify({ suffix: 'upstream_cx_total' })), 'other annotations still count');
  });
});
