import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { resolveCaptureConfig, type CaptureFlags } from './config.ts';

const base: CaptureFlags = {
  envoyPort: '15001',
  inboundCapturePort: '15006',
  proxyUid: '1337',
  mode: 'REDIRECT',
  inboundPorts: '',
  excludeInboundPorts: '',
  includeOutboundCidrs: '*',
  excludeOutboundCidrs: '',
  excludeOutboundPorts: '',
};

function rejects(flags: Partial<CaptureFlags>, message: RegExp): void {
  assert.throws(() => resolveCaptureConfig({ ...base, ...flags }), (error: unknown) => {
    assert.ok(error instanceof AgentError);
    assert.equal(error.exitCode, 2);
    assert.match(error.message, message);
    return true;
  });
}

describe('resolveCaptureConfig', () => {
  it('takes the defaults and lets the GID follow the UID', () => {
    const config = resolveCaptureConfig({ ...base, proxyUid: '1500' });
    assert.equal(config.proxyGid, 1500);
    assert.equal(config.outboundCapturePort, 15001);
    assert.equal(config.includedOutboundCidrs, '*');
  });

  it('reads lists with spaces, duplicates and empty items', () => {
    const config = resolveCaptureConfig({ ...base, inboundPorts: ' 80, 443,,80 ', excludeOutboundCidrs: '10.0.0.0/8, 1.2.3.4' });
    assert.deepEqual(config.inboundPorts, [80, 443]);
    assert.deepEqual(config.excludedOutboundCidrs, ['10.0.0.0/8', '1.2.3.4/32']);
  });

  it('allows excluding ports under a wildcard capture', () => {
    assert.deepEqual(resolveCaptureConfig({ ...base, inboundPorts: '*', excludeInboundPorts: '15020' }).excludedInboundPorts, [15020]);
  });

  const bad: [string, Partial<CaptureFlags>, RegExp][] = [
    ['a port out of range', { envoyPort: '70000' }, /^-p: port "70000" is not an integer from 1 to 65535$/],
    ['port 0', { inboundPorts: '0' }, /^-b: port "0"/],
    ['a port that is not a number', { excludeInboundPorts: '80,http' }, /^-d: port "http"/],
    ['a port both captured and excluded', { inboundPorts: '80,8080', excludeInboundPorts: '8080' }, /^-d: port 8080 is also in the captured inbound ports \(-b\)$/],
    ['TPROXY', { mode: 'TPROXY' }, /^-m: interception mode "TPROXY" is not supported/],
    ['a negative UID', { proxyUid: '-1' }, /^-u: "-1" is not a numeric id$/],
    ['a named GID', { proxyGid: 'istio' }, /^-g: /],
    ['an IPv6 range', { includeOutboundCidrs: 'fd00::/8' }, /^-i: "fd00::\/8" is not an IPv4 address or CIDR/],
    ['a prefix over 32', { excludeOutboundCidrs: '10.0.0.0/33' }, /^-x: /],
    ['excluding everything', { excludeOutboundCidrs: '*' }, /^-x: /],
  ];
  for (const [name, flags, message] of bad) {
    it(`rejects ${name} with a usage error naming the flag`, () => rejects(flags, message));
  }
});
