import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveCaptureConfig, type CaptureFlags } from './config.ts';
import { renderCommands, renderRestoreInput } from './render.ts';
import { buildCaptureRules, type Rule } from './rules.ts';

/** The flags the injection template passes, before each case's changes. */
const injected: CaptureFlags = {
  envoyPort: '15001',
  inboundCapturePort: '15006',
  proxyUid: '1337',
  mode: 'REDIRECT',
  inboundPorts: '8080,9090',
  excludeInboundPorts: '15090,15021,15020',
  includeOutboundCidrs: '*',
  excludeOutboundCidrs: '',
  excludeOutboundPorts: '',
};

const rulesFor = (flags: Partial<CaptureFlags>) =>
  buildCaptureRules(resolveCaptureConfig({ ...injected, ...flags })).rules;
const line = (rule: Rule) => `-A ${rule.chain} ${rule.spec.join(' ')}`;
const linesFor = (flags: Partial<CaptureFlags>) => rulesFor(flags).map(line);

describe('renderRestoreInput (golden)', () => {
  it('writes the injector default: listed inbound ports, every outbound range', () => {
    const text = renderRestoreInput(buildCaptureRules(resolveCaptureConfig(injected)));
    assert.equal(text, `*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
:ISTIO_REDIRECT - [0:0]
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 8080 -j ISTIO_IN_REDIRECT
-A ISTIO_INBOUND -p tcp --dport 9090 -j ISTIO_IN_REDIRECT
-A OUTPUT -p tcp -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -s 127.0.0.6/32 -o lo -j RETURN
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
COMMIT
`);
  });

  it("writes '*' inbound with SSH and the excluded ports returned first", () => {
    assert.deepEqual(linesFor({ inboundPorts: '*' }).slice(2, 8), [
      '-A PREROUTING -p tcp -j ISTIO_INBOUND',
      '-A ISTIO_INBOUND -p tcp --dport 22 -j RETURN',
      '-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN',
      '-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN',
      '-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN',
      '-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT',
    ]);
  });

  it('renders the same rules as iptables commands', () => {
    const text = renderCommands(buildCaptureRules(resolveCaptureConfig(injected)));
    assert.match(text, /^iptables -t nat -N ISTIO_INBOUND\n/);
    assert.match(text, /\niptables -t nat -A ISTIO_OUTPUT -j ISTIO_REDIRECT\n$/);
  });
});

describe('buildCaptureRules', () => {
  const cases: { name: string; flags: Partial<CaptureFlags>; has: string[]; lacks: string[] }[] = [
    {
      name: 'no inbound ports: no PREROUTING jump and no self-call redirect',
      flags: { inboundPorts: '' },
      has: ['-A OUTPUT -p tcp -j ISTIO_OUTPUT'],
      lacks: ['-A PREROUTING -p tcp -j ISTIO_INBOUND', '-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT'],
    },
    {
      name: 'a separate proxy GID',
      flags: { proxyGid: '2000' },
      has: ['-A ISTIO_OUTPUT -m owner --gid-owner 2000 -j RETURN', '-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN'],
      lacks: ['-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN'],
    },
    {
      name: 'listed outbound ranges, the rest returned',
      flags: { includeOutboundCidrs: '10.96.0.0/12,172.20.0.1' },
      has: ['-A ISTIO_OUTPUT -d 10.96.0.0/12 -j ISTIO_REDIRECT', '-A ISTIO_OUTPUT -d 172.20.0.1/32 -j ISTIO_REDIRECT', '-A ISTIO_OUTPUT -j RETURN'],
      lacks: ['-A ISTIO_OUTPUT -j ISTIO_REDIRECT'],
    },
    {
      name: 'no outbound ranges: nothing sent to ISTIO_REDIRECT',
      flags: { includeOutboundCidrs: '' },
      has: [],
      lacks: ['-A ISTIO_OUTPUT -j ISTIO_REDIRECT', '-A ISTIO_OUTPUT -j RETURN'],
    },
    {
      name: 'excluded outbound ranges and ports',
      flags: { excludeOutboundCidrs: '169.254.169.254', excludeOutboundPorts: '3306' },
      has: ['-A ISTIO_OUTPUT -d 169.254.169.254/32 -j RETURN', '-A ISTIO_OUTPUT -p tcp --dport 3306 -j RETURN'],
      lacks: [],
    },
    {
      name: 'other capture ports',
      flags: { envoyPort: '16001', inboundCapturePort: '16006' },
      has: ['-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 16001', '-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 16006'],
      lacks: [],
    },
  ];
  for (const { name, flags, has, lacks } of cases) {
    it(name, () => {
      const lines = linesFor(flags);
      for (const expected of has) assert.ok(lines.includes(expected), `missing: ${expected}`);
      for (const unexpected of lacks) assert.ok(!lines.includes(unexpected), `unexpected: ${unexpected}`);
    });
  }

  it('excludes before it captures: every RETURN of a chain precedes its catch-all jump', () => {
    const lines = linesFor({ inboundPorts: '*', excludeOutboundCidrs: '10.0.0.1', excludeOutboundPorts: '25' });
    const catchAlls = ['-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT', '-A ISTIO_OUTPUT -j ISTIO_REDIRECT'];
    for (const catchAll of catchAlls) {
      const chain = catchAll.split(' ')[1];
      const returns = lines.flatMap((text, index) => (text.startsWith(`-A ${chain} `) && text.endsWith('RETURN') ? [index] : []));
      assert.ok(returns.length > 1 && returns.every((index) => index < lines.indexOf(catchAll)), catchAll);
    }
  });
});
