import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertGone } from '../support/agent.ts';
import { epochLive } from './reconcile-support.ts';
import { startSdsRig } from './sds-support.ts';

const statNames = async (adminPort: number) => (await (await fetch(`http://127.0.0.1:${adminPort}/stats`)).text()).split('\n').map((line) => line.split(':')[0]!);

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
        for (const required of ['server.state', 'listener_manager.workers_started', 'cluster_manager.cds.update_success', 'cluster.xds-grpc.upstream_cx_total']) {
          assert.ok(names.includes(required), `${required} is kept (readiness and the xDS cluster need it)`);
        }
        assert.equal(names.some((name) => name.startsWith('cluster.upstream.')), kept, names.filter((name) => name.startsWith('cluster.')).slice(0, 5).join(', '));
        assert.equal(names.some((name) => name.startsWith('http.ingress_http.')), false, 'listener HTTP stats are not created');
      } finally {
        await rig.close();
        await assertGone(rig.agent.envoyPids());
      }
    });
  }
});
