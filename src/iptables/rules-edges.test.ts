import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatherFlags, resolveCaptureConfig } from './config.ts';
import { ruleLine } from './render.ts';
import { buildCapturePlan, type Ipv6Mode, type Rule } from './rules.ts';

/** Argument sets the goldens of rules.test.ts leave out: listed inbound ports, TPROXY with -c, loopback in -i, -k under -i '*'. */
function planFor(cli: Record<string, string>, ipv6: Ipv6Mode = 'none') {
  const config = resolveCaptureConfig(gatherFlags({ 'istio-local-exclude-ports': '15090', ...cli }, {}), {});
  return buildCapturePlan(config, { ipv6, dnsServersV4: [], dnsServersV6: [] });
}
/** Each rule as `table line`, so a rule in the wrong table shows. */
const lines = (rules: readonly Rule[]) => rules.map((rule) => `${rule.table} ${ruleLine(rule)}`);
const inboundOf = (rules: readonly Rule[]) => lines(rules).filter((line) => / (ISTIO_INBOUND|PREROUTING) /.test(line));

describe('buildCapturePlan: listed inbound ports', () => {
  it('REDIRECT sends each listed port to ISTIO_IN_REDIRECT, and nothing else', () => {
    assert.deepEqual(inboundOf(planFor({ 'istio-inbound-ports': '8080,9090' }).v4), [
      'nat -A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN',
      'nat -A PREROUTING -p tcp -j ISTIO_INBOUND',
      'nat -A ISTIO_INBOUND -p tcp --dport 8080 -j ISTIO_IN_REDIRECT',
      'nat -A ISTIO_INBOUND -p tcp --dport 9090 -j ISTIO_IN_REDIRECT',
    ]);
  });

  it('TPROXY diverts established connections and hands new ones to ISTIO_TPROXY, per listed port, in mangle', () => {
    const mangle = inboundOf(planFor({ 'istio-inbound-ports': '8080', 'istio-inbound-interception-mode': 'TPROXY' }).v4).filter((line) =>
      line.startsWith('mangle -A'),
    );
    assert.deepEqual(mangle, [
      'mangle -A PREROUTING -p tcp -j ISTIO_INBOUND',
      'mangle -A ISTIO_INBOUND -p tcp --dport 8080 -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT',
      'mangle -A ISTIO_INBOUND -p tcp --dport 8080 -j ISTIO_TPROXY',
      'mangle -A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark',
    ]);
  });
});

describe('buildCapturePlan: interfaces', () => {
  it('TPROXY skips -c interfaces in mangle as well as nat', () => {
    const all = lines(planFor({ 'istio-exclude-interfaces': 'eth1', 'istio-inbound-interception-mode': 'TPROXY' }).v4);
    for (const table of ['nat', 'mangle']) {
      assert.ok(all.includes(`${table} -A PREROUTING -i eth1 -j RETURN`) && all.includes(`${table} -A OUTPUT -o eth1 -j RETURN`), table);
    }
  });

  it('with -i "*", what comes in on a -k interface goes to Envoy as outbound, in both families', () => {
    const plan = planFor({ 'istio-service-cidr': '*', 'kube-virt-interfaces': 'veth0' }, 'capture');
    for (const rules of [plan.v4, plan.v6]) assert.ok(lines(rules).includes('nat -I PREROUTING 1 -i veth0 -j ISTIO_REDIRECT'));
  });
});

describe('buildCapturePlan: loopback in -i', () => {
  const appLoopbackReturns = (cli: Record<string, string>) =>
    [...lines(planFor(cli, 'capture').v4), ...lines(planFor(cli, 'capture').v6)].filter((line) => line.includes(' ! --uid-owner 1337 -j RETURN'));

  it('any loopback range among others, IPv4 or ::1, keeps the app\'s loopback traffic capturable', () => {
    for (const cidr of ['10.0.0.0/8,127.0.0.1/32', '::1', 'fd00::/8,::1/128']) assert.deepEqual(appLoopbackReturns({ 'istio-service-cidr': cidr }), [], cidr);
  });

  it('without one, the app\'s loopback traffic is returned in both families', () => {
    assert.deepEqual(appLoopbackReturns({ 'istio-service-cidr': '10.0.0.0/8,fd00::/8' }), [
      'nat -A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN',
      'nat -A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN',
    ]);
  });
});

it('an appended rule is plain data: table, chain and spec, with no insert position', () => {
  assert.deepEqual(planFor({ 'kube-virt-interfaces': 'veth0' }).v4.slice(0, 2), [
    { table: 'nat', chain: 'PREROUTING', spec: ['-i', 'veth0', '-j', 'RETURN'], insertAt: 1 },
    { table: 'nat', chain: 'ISTIO_INBOUND', spec: ['-p', 'tcp', '--dport', '15008', '-j', 'RETURN'] },
  ]);
});
