import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { defaultValuesPath } from './load.ts';
import type { InjectValues } from './types.ts';
import { parseValues } from './values.ts';

const defaults = parseValues(readFileSync(defaultValuesPath, 'utf8'), defaultValuesPath);

describe('parseValues', () => {
  it('reads the shipped defaults', () => {
    assert.equal(defaults.proxyUID, 1337);
    assert.equal(defaults.excludeInboundPorts, '15090,15021,15020');
    assert.equal(defaults.holdApplicationUntilProxyStarts, false);
  });

  it('overrides only the keys given; an empty file changes nothing', () => {
    const values = parseValues('discoveryAddress: istiod.istio-system.svc:15010\nholdApplicationUntilProxyStarts: true\n', 'v.yaml', defaults);
    assert.equal(values.discoveryAddress, 'istiod.istio-system.svc:15010');
    assert.equal(values.holdApplicationUntilProxyStarts, true);
    assert.equal(values.image, defaults.image);
    assert.deepEqual(parseValues('', 'v.yaml', defaults), defaults);
  });

  const bad: [string, string, RegExp][] = [
    ['an unknown key', 'imagee: x', /^v\.yaml: imagee: unknown key$/],
    ['a wrong type', 'proxyUID: "1337"', /^v\.yaml: proxyUID: must be an integer$/],
    ['a non-string metadata value', 'proxyMetadata: {DNS: true}', /^v\.yaml: proxyMetadata: must be a mapping of strings$/],
    ['a port out of range', 'inboundCapturePort: 65536', /^v\.yaml: values: inboundCapturePort: port "65536"/],
    ['a bad port list', 'excludeInboundPorts: "15090,abc"', /^v\.yaml: values: excludeInboundPorts: port "abc"/],
    ['TPROXY', 'interceptionMode: TPROXY', /^v\.yaml: values: interceptionMode: only REDIRECT/],
    ['an address without port', 'discoveryAddress: istiod', /^v\.yaml: values: discoveryAddress: must be host:port$/],
    ['a number for a string', 'image: 5', /^v\.yaml: image: must be a string$/],
    ['a string for a boolean', 'prometheusMerge: "yes"', /^v\.yaml: prometheusMerge: must be true or false$/],
    ['a list for resources', 'resources: [a]', /^v\.yaml: resources: must be a mapping$/],
    ['an empty image', 'image: ""', /^v\.yaml: values: image: must not be empty$/],
    ['a blank image', 'image: "  "', /^v\.yaml: values: image: must not be empty$/],
    ['an address with a space', 'discoveryAddress: "istiod x:15010"', /^v\.yaml: values: discoveryAddress: must be host:port$/],
    ['an address with a trailing word', 'discoveryAddress: "istiod:15010x"', /^v\.yaml: values: discoveryAddress: must be host:port$/],
    ['a negative concurrency', 'concurrency: -1', /^v\.yaml: values: concurrency: must be 0 or more$/],
    ['a version with a v', 'kubernetesVersion: "v1.29"', /^v\.yaml: values: kubernetesVersion: must be "major\.minor", e\.g\. "1\.29"$/],
    ['a version with a suffix', 'kubernetesVersion: "1.29-gke"', /^v\.yaml: values: kubernetesVersion: must be "major\.minor"/],
    ['a major-only version', 'kubernetesVersion: "1"', /^v\.yaml: values: kubernetesVersion: must be "major\.minor"/],
    ['a negative drain', 'terminationDrainDurationSeconds: -1', /^v\.yaml: values: terminationDrainDurationSeconds: must be 0 or more$/],
    ['a status port of 0', 'statusPort: 0', /^v\.yaml: values: statusPort: port "0"/],
    ['an outbound capture port of 0', 'outboundCapturePort: 0', /^v\.yaml: values: outboundCapturePort: port "0"/],
    ['a negative proxy UID', 'proxyUID: -1', /^v\.yaml: values: proxyUID: "-1" is not a numeric id$/],
    ['a negative proxy GID', 'proxyGID: -1', /^v\.yaml: values: proxyGID: "-1" is not a numeric id$/],
    ['a bad inbound port', 'includeInboundPorts: "80,x"', /^v\.yaml: values: includeInboundPorts: port "x"/],
    ['a bad outbound range', 'includeOutboundIPRanges: "10.0.0.0/33"', /^v\.yaml: values: includeOutboundIPRanges: /],
    ['a bad excluded range', 'excludeOutboundIPRanges: "nope"', /^v\.yaml: values: excludeOutboundIPRanges: /],
    ['a metadata name with a dash', 'proxyMetadata: {A-B: x}', /^v\.yaml: values: proxyMetadata\.A-B: must be a valid env var name$/],
    ['a metadata name starting with a digit', 'proxyMetadata: {1A: x}', /^v\.yaml: values: proxyMetadata\.1A: must be a valid env var name$/],
    ['a metadata name ending with a dot', 'proxyMetadata: {AB.: x}', /^v\.yaml: values: proxyMetadata\.AB\.: must be a valid env var name$/],
    ['a list instead of a mapping', '- a', /^v\.yaml: values must be a YAML mapping$/],
    ['broken YAML', 'image: [', /^v\.yaml: not valid YAML: /],
  ];
  for (const [name, text, message] of bad) {
    it(`rejects ${name}`, () => assert.throws(() => parseValues(text, 'v.yaml', defaults), { message }));
  }

  const good: [string, string, Partial<InjectValues>][] = [
    ['zero concurrency (every core)', 'concurrency: 0', { concurrency: 0 }],
    ['a zero drain', 'terminationDrainDurationSeconds: 0', { terminationDrainDurationSeconds: 0 }],
    ['a two-digit version', 'kubernetesVersion: "10.31"', { kubernetesVersion: '10.31' }],
    ['a patch version', 'kubernetesVersion: "1.29.10"', { kubernetesVersion: '1.29.10' }],
    ['the usual env names in metadata', 'proxyMetadata: {_A1: "1", ISTIO_META_DNS_CAPTURE: "true"}', { proxyMetadata: { _A1: '1', ISTIO_META_DNS_CAPTURE: 'true' } }],
    ['every inbound port', 'includeInboundPorts: "*"', { includeInboundPorts: '*' }],
  ];
  for (const [name, text, expected] of good) {
    it(`accepts ${name}`, () => assert.deepEqual(parseValues(text, 'v.yaml', defaults), { ...defaults, ...expected }));
  }

  it('without a base, names the first key the file lacks', () => {
    const text = readFileSync(defaultValuesPath, 'utf8').replace(/^proxyGID:.*$/m, '');
    assert.throws(() => parseValues(text, 'defaults.yaml'), { message: /^defaults\.yaml: proxyGID: missing$/ });
  });
});
