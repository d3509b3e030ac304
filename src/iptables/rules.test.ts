import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatherFlags, resolveCaptureConfig } from './config.ts';
import { renderCommands, renderRestoreInput, ruleLine } from './render.ts';
import { buildCapturePlan, type HostFacts, type Ipv6Mode, type Rule } from './rules.ts';

/** The flags Istio's injection template passes with the chart's defaults. */
const template = {
  'envoy-port': '15001', 'inbound-capture-port': '15006', 'proxy-uid': '1337', 'istio-inbound-interception-mode': 'REDIRECT',
  'istio-service-cidr': '*', 'istio-service-exclude-cidr': '', 'istio-inbound-ports': '*', 'istio-local-exclude-ports': '15090,15021,15020',
};

function planFor(cli: Record<string, string>, host: Partial<HostFacts> = {}, env: Record<string, string> = {}) {
  const config = resolveCaptureConfig(gatherFlags({ ...template, ...cli }, env), env);
  return buildCapturePlan(config, { ipv6: 'none', dnsServersV4: [], dnsServersV6: [], ...host });
}
const lines = (rules: readonly Rule[]) => rules.map(ruleLine);

/** Each golden: the iptables-restore input for one of the template's argument sets. */
const goldens: { name: string; cli: Record<string, string>; ipv6: Ipv6Mode; dns?: string[]; family: 'v4' | 'v6' }[] = [
  { name: "the injector default: every inbound port but the agent's, every outbound range", cli: {}, ipv6: 'none', family: 'v4' },
  { name: 'an IPv6-only pod: the same capture with ip6tables, ::6 and ::1 for 127.0.0.6 and 127.0.0.1', cli: {}, ipv6: 'capture', family: 'v6' },
  { name: 'a dual-stack pod without dual stack: new inbound IPv6 connections reset on the ports IPv4 captures', cli: {}, ipv6: 'reject', family: 'v6' },
  { name: 'listed inbound ports, dual-stack reject on those ports only', cli: { 'istio-inbound-ports': '8080,9090' }, ipv6: 'reject', family: 'v6' },
  {
    name: 'DNS capture (ISTIO_META_DNS_CAPTURE) towards the resolv.conf server',
    cli: { 'redirect-dns': 'true' },
    ipv6: 'none',
    dns: ['10.96.0.10'],
    family: 'v4',
  },
  { name: 'TPROXY', cli: { 'istio-inbound-interception-mode': 'TPROXY' }, ipv6: 'none', family: 'v4' },
  {
    name: 'the annotations: -q, -o, -k, -c, -i list and -x, with --drop-invalid',
    cli: {
      'istio-outbound-ports': '8443',
      'istio-local-outbound-ports-exclude': '3306',
      'kube-virt-interfaces': 'veth0',
      'istio-exclude-interfaces': 'eth1',
      'istio-service-cidr': '10.96.0.0/12',
      'istio-service-exclude-cidr': '10.96.0.1',
      'drop-invalid': 'true',
    },
    ipv6: 'none',
    family: 'v4',
  },
];

describe('renderRestoreInput (golden, the template\'s argument sets)', () => {
  const expected: string[] = [
    `*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_REDIRECT - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
COMMIT
`,
    `*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_REDIRECT - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -o lo -s ::6/128 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d ::1/128 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
COMMIT
`,
    `*filter
:ISTIO_INBOUND_REJECT - [0:0]
-A INPUT -p tcp -j ISTIO_INBOUND_REJECT
-A ISTIO_INBOUND_REJECT -i lo -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --dport 15008 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --syn -j REJECT --reject-with tcp-reset
COMMIT
`,
    `*filter
:ISTIO_INBOUND_REJECT - [0:0]
-A INPUT -p tcp -j ISTIO_INBOUND_REJECT
-A ISTIO_INBOUND_REJECT -i lo -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --dport 15008 -j RETURN
-A ISTIO_INBOUND_REJECT -p tcp --dport 8080 --syn -j REJECT --reject-with tcp-reset
-A ISTIO_INBOUND_REJECT -p tcp --dport 9090 --syn -j REJECT --reject-with tcp-reset
COMMIT
`,
    `*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_REDIRECT - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
:ISTIO_OUTPUT_DNS - [0:0]
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp -m multiport ! --dports 53,15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_OUTPUT_DNS
-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -d 10.96.0.10/32 -j REDIRECT --to-ports 15053
-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 10.96.0.10/32 -j REDIRECT --to-port 15053
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
COMMIT
*raw
:ISTIO_OUTPUT_DNS - [0:0]
:ISTIO_INBOUND - [0:0]
-A OUTPUT -j ISTIO_OUTPUT_DNS
-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 1337 -j CT --zone 1
-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 1337 -j CT --zone 2
-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 1337 -j CT --zone 1
-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 1337 -j CT --zone 2
-A PREROUTING -j ISTIO_INBOUND
-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 10.96.0.10/32 -j CT --zone 2
-A ISTIO_INBOUND -p udp --sport 53 -s 10.96.0.10/32 -j CT --zone 1
COMMIT
`,
    `*mangle
:ISTIO_DIVERT - [0:0]
:ISTIO_TPROXY - [0:0]
:ISTIO_INBOUND - [0:0]
-A ISTIO_DIVERT -j MARK --set-mark 1337
-A ISTIO_DIVERT -j ACCEPT
-A ISTIO_TPROXY ! -d 127.0.0.1/32 -p tcp -j TPROXY --tproxy-mark 1337/0xffffffff --on-port 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT
-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY
-A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark
-A OUTPUT -p tcp -o lo -m mark --mark 1337 -j RETURN
-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --uid-owner 1337 -j MARK --set-mark 1338
-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --gid-owner 1337 -j MARK --set-mark 1338
-A OUTPUT -p tcp -m connmark --mark 1337 -j CONNMARK --restore-mark
-I ISTIO_INBOUND 1 -p tcp -m mark --mark 1337 -j RETURN
-I ISTIO_INBOUND 2 -p tcp -s 127.0.0.6/32 -i lo -j RETURN
-I ISTIO_INBOUND 3 -p tcp -i lo -m mark ! --mark 1338 -j RETURN
COMMIT
*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_REDIRECT - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
COMMIT
`,
    `*mangle
:ISTIO_DROP - [0:0]
-A PREROUTING -m conntrack --ctstate INVALID -j ISTIO_DROP
-A ISTIO_DROP -j DROP
COMMIT
*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_REDIRECT - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
-A PREROUTING -i eth1 -j RETURN
-A OUTPUT -o eth1 -j RETURN
-I PREROUTING 1 -i veth0 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -p tcp --dport 3306 -j RETURN
-A ISTIO_OUTPUT -p udp --dport 3306 -j RETURN
-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -d 10.96.0.1/32 -j RETURN
-A ISTIO_OUTPUT -p tcp --dport 8443 -j ISTIO_REDIRECT
-I PREROUTING 1 -i veth0 -d 10.96.0.0/12 -j ISTIO_REDIRECT
-A ISTIO_OUTPUT -d 10.96.0.0/12 -j ISTIO_REDIRECT
COMMIT
`,
  ];
  for (const [index, golden] of goldens.entries()) {
    it(golden.name, () => {
      const plan = planFor(golden.cli, { ipv6: golden.ipv6, dnsServersV4: golden.dns ?? [] });
      assert.equal(renderRestoreInput(plan[golden.family]), expected[index]);
    });
  }

  it('writes no IPv6 rules for a pod without an IPv6 address', () => {
    assert.deepEqual(planFor({}).v6, []);
  });

  it('renders the same rules as iptables commands', () => {
    const text = renderCommands(planFor({}).v4);
    assert.match(text, /^iptables -t nat -N ISTIO_INBOUND\n/);
    assert.match(text, /\niptables -t nat -A ISTIO_OUTPUT -j ISTIO_REDIRECT\n$/);
  });
});

describe('buildCapturePlan', () => {
  const argumentSets: Record<string, string>[] = [
    {},
    { 'istio-inbound-ports': '22,8080' },
    { 'redirect-dns': 'true', 'capture-all-dns': 'true' },
    { 'istio-inbound-interception-mode': 'TPROXY' },
    { 'proxy-uid': '3,4', 'proxy-gid': '1,2' },
  ];

  it('never exempts SSH: no rule returns port 22 in any argument set or family', () => {
    for (const cli of argumentSets) {
      for (const ipv6 of ['capture', 'reject'] as const) {
        const plan = planFor(cli, { ipv6 });
        assert.deepEqual([...lines(plan.v4), ...lines(plan.v6)].filter((line) => /--dport 22 .*RETURN/.test(line)), [], JSON.stringify(cli));
      }
    }
  });

  it('returns the tunnel port 15008 inbound and keeps it out of every self-call redirect', () => {
    for (const cli of argumentSets) {
      const all = lines(planFor(cli, { ipv6: 'capture' }).v4).concat(lines(planFor(cli, { ipv6: 'capture' }).v6));
      assert.ok(all.includes('-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN'));
      const selfCalls = all.filter((line) => line.endsWith('-j ISTIO_IN_REDIRECT') && line.includes('-m owner'));
      assert.ok(selfCalls.length >= 2 && selfCalls.every((line) => /! --dport 15008|! --dports 53,15008/.test(line)), selfCalls.join('\n'));
    }
  });

  it('jumps from OUTPUT to ISTIO_OUTPUT for every protocol, so DNS over UDP can be captured', () => {
    const all = lines(planFor({}).v4);
    assert.ok(all.includes('-A OUTPUT -j ISTIO_OUTPUT'));
    assert.ok(!all.some((line) => line.startsWith('-A OUTPUT -p tcp -j ISTIO_OUTPUT')));
  });

  it('DNS: the app\'s UDP and TCP 53 go to 15053; the proxy\'s own queries are returned first', () => {
    const all = lines(planFor({ 'redirect-dns': 'true', 'capture-all-dns': 'true' }).v4);
    const proxyReturn = all.indexOf('-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN');
    const dnsJump = all.indexOf('-A ISTIO_OUTPUT -j ISTIO_OUTPUT_DNS');
    assert.ok(proxyReturn >= 0 && dnsJump > proxyReturn, 'the proxy UID returns before DNS is redirected');
    assert.ok(all.includes('-A ISTIO_OUTPUT_DNS -p udp --dport 53 -j REDIRECT --to-port 15053'));
    assert.ok(all.includes('-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -j REDIRECT --to-ports 15053'));
  });

  it('DNS without --capture-all-dns and without a resolv.conf server captures nothing, as Istio', () => {
    assert.ok(!lines(planFor({ 'redirect-dns': 'true' }).v4).some((line) => line.includes('ISTIO_OUTPUT_DNS')));
  });

  it('no inbound ports: no PREROUTING jump, no self-call redirect, no IPv6 reject', () => {
    const plan = planFor({ 'istio-inbound-ports': '' }, { ipv6: 'reject' });
    assert.ok(!lines(plan.v4).includes('-A PREROUTING -p tcp -j ISTIO_INBOUND'));
    assert.deepEqual(plan.v6, []);
  });

  it('loopback in -i keeps the app\'s loopback traffic capturable, as Istio', () => {
    assert.ok(!lines(planFor({ 'istio-service-cidr': '127.1.2.3/32' }).v4).some((line) => line.includes('! --uid-owner 1337 -j RETURN')));
  });

  it('owner groups from ISTIO_OUTBOUND_OWNER_GROUPS: only those groups are captured', () => {
    assert.ok(
      lines(planFor({}, {}, { ISTIO_OUTBOUND_OWNER_GROUPS: 'java,202' }).v4).includes(
        '-A ISTIO_OUTPUT -m owner ! --gid-owner java -m owner ! --gid-owner 202 -j RETURN',
      ),
    );
    assert.ok(lines(planFor({}, {}, { ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE: '888' }).v4).includes('-A ISTIO_OUTPUT -m owner --gid-owner 888 -j RETURN'));
  });

  it('IPv6 ranges of -i and -x go to the IPv6 rules only', () => {
    const plan = planFor({ 'istio-service-cidr': '10.0.0.0/8,fd00::/8', 'istio-service-exclude-cidr': 'fd00::1' }, { ipv6: 'capture' });
    assert.ok(lines(plan.v4).includes('-A ISTIO_OUTPUT -d 10.0.0.0/8 -j ISTIO_REDIRECT') && !lines(plan.v4).some((line) => line.includes('fd00')));
    assert.ok(lines(plan.v6).includes('-A ISTIO_OUTPUT -d fd00::/8 -j ISTIO_REDIRECT') && lines(plan.v6).includes('-A ISTIO_OUTPUT -d fd00::1/128 -j RETURN'));
  });

  it('excludes before it captures: every RETURN of a chain precedes its catch-all jump', () => {
    const all = lines(planFor({ 'istio-service-exclude-cidr': '10.0.0.1', 'istio-local-outbound-ports-exclude': '25' }).v4);
    for (const catchAll of ['-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT', '-A ISTIO_OUTPUT -j ISTIO_REDIRECT']) {
      const chain = catchAll.split(' ')[1];
      const returns = all.flatMap((text, index) => (text.startsWith(`-A ${chain} `) && text.endsWith('RETURN') ? [index] : []));
      assert.ok(returns.length > 1 && returns.every((index) => index < all.indexOf(catchAll)), catchAll);
    }
  });
});
