import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { defaultValuesPath } from './load.ts';
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
    ['a list instead of a mapping', '- a', /^v\.yaml: values must be a YAML mapping$/],
    ['broken YAML', 'image: [', /^v\.yaml: not valid YAML: /],
  ];
  for (const [name, text, message] of bad) {
    it(`rejects ${name}`, () => assert.throws(() => parseValues(text, 'v.yaml', defaults), { message }));
  }
});
