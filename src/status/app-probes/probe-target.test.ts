import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { probeNetwork, type ProbeNetworkInput } from './probe-target.ts';

describe('probeNetwork: where app probes go and from where', () => {
  const base = { legacyLocalhost: false, http2: true, keepAlive: false };
  const cases: [string, Partial<ProbeNetworkInput>, string, string][] = [
    ['the pod IP, from 127.0.0.6', { podIp: '10.1.2.3' }, '10.1.2.3', '127.0.0.6'],
    ['localhost only with REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION', { podIp: '10.1.2.3', legacyLocalhost: true }, '127.0.0.1', '127.0.0.6'],
    ['an IPv6 pod IP, from ::6', { podIp: 'fd00::5' }, 'fd00::5', '::6'],
    ['an IPv6 pod with the legacy rewrite: ::1', { podIp: 'fd00::5', legacyLocalhost: true }, '::1', '::6'],
    ['a link-local IPv6 does not make the pod IPv6', { podIp: 'fe80::1' }, 'fe80::1', '127.0.0.6'],
    ['an IPv6 pod IP that only ends like a link-local one, from ::6', { podIp: '2001:db8::fe80' }, '2001:db8::fe80', '::6'],
    ['no pod IP known: loopback, as Istio\'s empty host', {}, '127.0.0.1', '127.0.0.6'],
  ];
  for (const [name, input, destination, localAddress] of cases) {
    it(name, () => {
      const network = probeNetwork({ ...base, ...input });
      assert.equal(network.destination, destination);
      assert.equal(network.localAddress, localAddress);
    });
  }
});
