import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import { renderBootstrap } from './render.ts';

interface DynamicResources {
  ads_config: { api_type: string };
  cds_config: Record<string, unknown>;
  lds_config: Record<string, unknown>;
}

async function dynamicResources(deltaXds: boolean): Promise<DynamicResources> {
  const commandLine = { values: { deltaXds }, sourceOf: () => 'default' };
  const { config } = resolveAgentConfig({ proxyType: 'sidecar', commandLine, proxyConfig: mergeProxyConfigs([]) });
  const context = { nodeId: 'sidecar~10.1.2.3~pod.ns~ns.svc.cluster.local', metadata: {}, xdsSocketPath: '/x/XDS', readinessSocketPath: '/x/ready' };
  return (JSON.parse(await renderBootstrap(config, context)) as { dynamic_resources: DynamicResources }).dynamic_resources;
}

/*
 * Istio's bootstrap waits for CDS and LDS without a limit. With Envoy's
 * default 15 s each, a hot-restart child whose discovery server takes the
 * call and answers nothing goes LIVE with its static listeners alone after
 * 30 s, and its parent, which served, drains.
 */
test('CDS and LDS have no initial fetch timeout (0s, as Istio renders them), Delta and State of the World alike', async () => {
  for (const delta of [true, false]) {
    const resources = await dynamicResources(delta);
    assert.equal(resources.ads_config.api_type, delta ? 'DELTA_GRPC' : 'GRPC');
    for (const source of [resources.cds_config, resources.lds_config]) {
      assert.deepEqual(source, { ads: {}, initial_fetch_timeout: '0s', resource_api_version: 'V3' }, `delta ${delta}`);
    }
  }
});
