import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeProxyConfigs } from '../settings/proxy-config-sources.ts';
import { resolveAgentConfig } from '../settings/resolve-agent-config.ts';
import { metadataDiscoveryAsked, metadataDiscoveryExtensions } from './metadata-discovery.ts';

test('metadata discovery: always for a waypoint, for another proxy when the node says METADATA_DISCOVERY, on Delta only (Istio\'s rule)', () => {
  const cases: [string, boolean, Record<string, unknown>, boolean][] = [
    ['waypoint', true, {}, true],
    ['waypoint', false, {}, false],
    ['sidecar', true, { METADATA_DISCOVERY: 'true' }, true],
    ['sidecar', true, { METADATA_DISCOVERY: 't' }, true],
    ['router', true, { METADATA_DISCOVERY: true }, true],
    ['sidecar', true, { METADATA_DISCOVERY: 'false' }, false],
    ['sidecar', true, {}, false],
    // Only text or a boolean is read: a number is not Go's StringBool.
    ['sidecar', true, { METADATA_DISCOVERY: 1 }, false],
    ['sidecar', false, { METADATA_DISCOVERY: 'true' }, false],
  ];
  for (const [proxyType, deltaXds, metadata, rendered] of cases) {
    const extensions = metadataDiscoveryExtensions({ proxyType: proxyType as 'sidecar', deltaXds }, metadata);
    assert.deepEqual(extensions.map((e) => (e as { name: string }).name), rendered ? ['metadata_discovery'] : [], `${proxyType} delta=${deltaXds} ${JSON.stringify(metadata)}`);
  }
  assert.equal(metadataDiscoveryAsked({ proxyType: 'sidecar' }, { METADATA_DISCOVERY: 'true' }), true);
  const [extension] = metadataDiscoveryExtensions({ proxyType: 'waypoint', deltaXds: true }, {}) as { typed_config: Record<string, unknown> }[];
  assert.deepEqual(extension!.typed_config, {
    '@type': 'type.googleapis.com/udpa.type.v1.TypedStruct', type_url: 'type.googleapis.com/istio.workload.BootstrapExtension', value: { config_source: { ads: {} } },
  });
});

test('a waypoint is on Delta whatever it is told, and says so only when told otherwise', () => {
  const resolve = (proxyType: 'waypoint' | 'sidecar', deltaXds?: boolean) => {
    const commandLine = { values: deltaXds === undefined ? {} : { deltaXds }, sourceOf: (field: string) => (field === 'deltaXds' && deltaXds !== undefined ? 'env' : 'default') };
    return resolveAgentConfig({ proxyType, commandLine, proxyConfig: mergeProxyConfigs([]) }).config;
  };
  assert.deepEqual([resolve('waypoint', false).deltaXds, resolve('waypoint', false).deltaXdsForced], [true, true]);
  assert.deepEqual([resolve('waypoint').deltaXds, resolve('waypoint').deltaXdsForced], [true, undefined]);
  assert.deepEqual([resolve('sidecar', false).deltaXds, resolve('sidecar', false).deltaXdsForced], [false, undefined]);
});
