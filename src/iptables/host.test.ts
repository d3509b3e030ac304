import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideIpv6, parseResolvConf, type LocalAddress } from './host.ts';

const lo: LocalAddress[] = [{ address: '127.0.0.1', family: 'IPv4', internal: true }, { address: '::1', family: 'IPv6', internal: true }];
const v4: LocalAddress = { address: '10.1.2.3', family: 'IPv4', internal: false };
const v6: LocalAddress = { address: 'fd00::3', family: 'IPv6', internal: false };
const linkLocal: LocalAddress = { address: 'fe80::1', family: 'IPv6', internal: false };

describe('decideIpv6 (Istio getLocalIP, plus the dual-stack reject)', () => {
  const cases: [string, LocalAddress[], boolean, string][] = [
    ['an IPv4-only pod', [...lo, v4, linkLocal], false, 'none'],
    ['an IPv6-only pod', [...lo, linkLocal, v6], false, 'capture'],
    ['a dual-stack pod with dual stack', [...lo, v4, v6], true, 'capture'],
    ['a dual-stack pod without dual stack (Istio captures no IPv6)', [...lo, v4, v6], false, 'reject'],
    ['a pod whose first address is IPv6, without dual stack (Istio: IPv6)', [...lo, v6, v4], false, 'capture'],
    ['only loopback and link-local', [...lo, linkLocal], true, 'none'],
  ];
  for (const [name, addresses, dualStack, mode] of cases) {
    it(name, () => assert.equal(decideIpv6(addresses, dualStack).mode, mode));
  }
});

describe('parseResolvConf', () => {
  it('splits the name servers by family, dropping zones and duplicates', () => {
    const text =
      '# comment\nsearch default.svc.cluster.local\nnameserver 10.96.0.10\nnameserver fd00::10\nnameserver 10.96.0.10\n nameserver fe80::1%eth0\noptions ndots:5\n';
    assert.deepEqual(parseResolvConf(text), { v4: ['10.96.0.10'], v6: ['fd00::10', 'fe80::1'] });
  });
});

describe('decideIpv6: the validation\'s family', () => {
  it('follows the first address, as Istio\'s HostIP', () => {
    assert.equal(decideIpv6([...lo, v6, v4], true).firstIsIpv6, true);
    assert.equal(decideIpv6([...lo, v4, v6], true).firstIsIpv6, false);
  });
});
