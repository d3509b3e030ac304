import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { nftCases as cases, type NftCase as Case } from '../../test/support/nft-cases.ts';
import { gatherFlags, resolveCaptureConfig } from '../iptables/config.ts';
import type { HostFacts } from '../iptables/plan.ts';
import { renderCleanup, renderTransaction } from './render.ts';
import { buildNftRules } from './rules.ts';

/** Short and long flags as the command reads them, into the shared flag parser. */
function cliOf(args: readonly string[]): Record<string, string> {
  const long: Record<string, string> = { p: 'envoy-port', z: 'inbound-capture-port', u: 'proxy-uid', g: 'proxy-gid', m: 'istio-inbound-interception-mode',
    i: 'istio-service-cidr', x: 'istio-service-exclude-cidr', b: 'istio-inbound-ports', d: 'istio-local-exclude-ports', k: 'kube-virt-interfaces',
    c: 'istio-exclude-interfaces', q: 'istio-outbound-ports', o: 'istio-local-outbound-ports-exclude' };
  const cli: Record<string, string> = {};
  for (let at = 0; at < args.length; at++) {
    const arg = args[at]!;
    if (/^-[a-z]$/.test(arg)) cli[long[arg[1]!]!] = args[++at]!;
    else cli[arg.replace(/^--/, '')] = 'true';
  }
  return cli;
}

function transactionOf(testCase: Case): string {
  const config = resolveCaptureConfig(gatherFlags(cliOf(testCase.args), testCase.env), testCase.env);
  const servers = testCase.resolv ?? [];
  const dns = config.redirectDns && !config.captureAllDns;
  const host: HostFacts = {
    ipv6: testCase.ipv6 ? 'capture' : 'none',
    dnsServersV4: dns ? servers.filter((server) => !server.includes(':')) : [],
    dnsServersV6: dns ? servers.filter((server) => server.includes(':')) : [],
  };
  return renderTransaction(buildNftRules(config, host));
}

describe('the native nftables transaction, golden per case (its ruleset is checked against Istio\'s in test/e2e/nftables-istio-netns)', () => {
  for (const testCase of cases) {
    it(`${testCase.name}: ${testCase.about}`, async () => {
      const path = new URL(`testdata/${testCase.name}.nft`, import.meta.url);
      // UPDATE_GOLDEN=1 rewrites the golden files; review their diff before committing.
      if (process.env.UPDATE_GOLDEN === '1') await writeFile(path, transactionOf(testCase));
      assert.equal(transactionOf(testCase), await readFile(path, 'utf8'));
    });
  }
});

const base: Case = { name: '', about: '', args: ['-u', '1337', '-b', '*'], env: {}, ipv6: false };
const lines = (args: string[], more: Partial<Case> = {}) => transactionOf({ ...base, ...more, args }).split('\n');
const nat = (rule: string) => `add rule inet istio-proxy-nat ${rule}`;

describe('the native nftables rules, one behaviour each', () => {
  const table: [string, string[], Partial<Case>, string[], RegExp[]][] = [
    ['captures every inbound port but -d, returning the tunnel port first', ['-u', '1337', '-b', '*', '-d', '15021'], {},
      [nat('istio-inbound meta l4proto tcp tcp dport 15008 counter return'), nat('istio-inbound meta l4proto tcp tcp dport 15021 counter return'),
        nat('istio-inbound meta l4proto tcp counter jump istio-in-redirect'), nat('istio-in-redirect meta l4proto tcp counter redirect to :15006')], []],
    ['captures only the -b ports when listed', ['-u', '1337', '-b', '80,8080'], {},
      [nat('istio-inbound meta l4proto tcp tcp dport 80 counter jump istio-in-redirect'), nat('istio-inbound meta l4proto tcp tcp dport 8080 counter jump istio-in-redirect')],
      [/istio-inbound meta l4proto tcp counter jump/]],
    ['no inbound port: no jump from prerouting at all', ['-u', '1337', '-b', ''], {}, [], [/prerouting/]],
    ['never captures the proxy\'s own UIDs and GIDs', ['-u', '1337,1400', '-g', '1500', '-b', '*'], {},
      [nat('istio-output skuid 1337 counter return'), nat('istio-output skuid 1400 counter return'), nat('istio-output skgid 1500 counter return')], []],
    ['sends outbound to 15001 by -p, except the -x ranges, before the catch-all', ['-p', '15009', '-u', '1337', '-x', '198.18.0.0/15', '-i', '*'], {},
      [nat('istio-redirect meta l4proto tcp counter redirect to :15009'), nat('istio-output ip daddr 198.18.0.0/15 counter return'),
        nat('istio-output counter jump istio-redirect')], []],
    ['no IPv6 rules without IPv6 capture', ['-u', '1337'], { ipv6: false }, [], [/ip6 /]],
    ['the IPv6 exemptions with IPv6 capture', ['-u', '1337'], { ipv6: true },
      [nat('istio-output oifname lo ip6 saddr ::6/128 counter return'), nat('istio-output ip6 daddr ::1/128 counter return')], []],
    ['no DNS capture when resolv.conf names no server', ['-u', '1337', '--redirect-dns'], {}, [], [/15053/, /istio-proxy-raw (?!$)/m]],
    ['DNS to 15053 with the UID self-redirect skipping 53', ['-u', '1337', '--redirect-dns', '--capture-all-dns'], {},
      [nat('istio-output-dns udp dport 53 counter redirect to :15053'),
        nat('istio-output oifname lo meta l4proto tcp ip daddr != 127.0.0.1/32 tcp dport != { 53, 15008 } skuid 1337 counter jump istio-in-redirect'),
        'add rule inet istio-proxy-raw istio-output-dns udp dport 53 meta skuid 1337 counter ct zone set 1'], []],
    ['excluded interfaces skip only the nat table under REDIRECT', ['-u', '1337', '-c', 'eth9'], {},
      [nat('prerouting iifname "eth9" counter return'), nat('output oifname "eth9" counter return')], [/istio-proxy-mangle/]],
    ['IPv6 ranges and their -k rules only with IPv6 capture', ['-u', '1337', '-i', '198.18.0.0/15,2001:2::/48', '-k', 'veth0'], {},
      [nat('istio-output ip daddr 198.18.0.0/15 counter jump istio-redirect')], [/ip6 daddr 2001:2::\/48/]],
    ['a -k interface under -i \'*\' sends its inbound to 15001, first in prerouting', ['-u', '1337', '-i', '*', '-k', 'veth0'], {},
      ['insert rule inet istio-proxy-nat prerouting index 0 iifname "veth0" counter jump istio-redirect'], []],
    ['-i ::1/128 includes loopback: the app\'s loopback traffic is no longer returned', ['-u', '1337', '-i', '::1/128'], { ipv6: true },
      [nat('istio-output ip6 daddr ::1/128 counter jump istio-redirect')], [/oifname lo skuid != 1337/]],
    ['a group name is quoted, even one starting with digits; an id is not', ['-u', '1337'], { env: { ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE: '1000,2x' } },
      [nat('istio-output skgid 1000 counter return'), nat('istio-output skgid "2x" counter return')], []],
    ['an insert into a chain already holding rules stays an insert; one past its end is an append', ['-u', '1337', '-c', 'eth9', '-k', 'veth0'], {},
      ['insert rule inet istio-proxy-nat prerouting index 0 iifname "veth0" counter return'], [/insert rule .* index 0 iifname "veth0" counter jump/]],
  ];
  for (const [name, args, more, present, absent] of table) {
    it(name, () => {
      const got = lines(args, more);
      for (const line of present) assert.ok(got.includes(line), `missing: ${line}\n${got.join('\n')}`);
      for (const pattern of absent) assert.ok(!got.some((line) => pattern.test(line) && line.startsWith('add rule')), `unexpected ${pattern}\n${got.join('\n')}`);
    });
  }

  it('writes a table with rules afresh and removes a table without any, in one transaction', () => {
    const got = lines(['-u', '1337']);
    assert.deepEqual(got.slice(0, 3), ['add table inet istio-proxy-nat', 'delete table inet istio-proxy-nat', 'add table inet istio-proxy-nat']);
    assert.deepEqual(got.filter((line) => line.includes('istio-proxy-mangle')), ['add table inet istio-proxy-mangle', 'delete table inet istio-proxy-mangle']);
  });

  it('declares only the chains that hold or receive a rule', () => {
    const chains = lines(['-u', '1337', '-b', '']).filter((line) => line.startsWith('add chain'));
    assert.ok(!chains.some((line) => / prerouting | istio-output-dns$/.test(line)), chains.join('\n'));
    assert.ok(chains.includes('add chain inet istio-proxy-nat output { type nat hook output priority -100 ; }'), chains.join('\n'));
  });

  it('declares a chain that is only jumped to (DNS zones for an IPv6 server in a pod without IPv6 capture)', () => {
    const config = resolveCaptureConfig(gatherFlags({ 'proxy-uid': '1337', 'redirect-dns': 'true' }, {}), {});
    const rules = buildNftRules(config, { ipv6: 'none', dnsServersV4: [], dnsServersV6: ['2001:2::53'] });
    assert.ok(rules.every((rule) => typeof rule.rule === 'string' && rule.table.startsWith('istio-proxy-')));
    const text = renderTransaction(rules).split('\n');
    assert.ok(text.includes('add rule inet istio-proxy-raw prerouting counter jump istio-inbound'), text.join('\n'));
    assert.ok(text.includes('add chain inet istio-proxy-raw istio-inbound'), text.join('\n'));
  });

  it('--cleanup-only removes the three tables and nothing else', () => {
    assert.equal(renderCleanup(), ['nat', 'mangle', 'raw'].flatMap((t) => [`add table inet istio-proxy-${t}`, `delete table inet istio-proxy-${t}`]).join('\n') + '\n');
  });
});
