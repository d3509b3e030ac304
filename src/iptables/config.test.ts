import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { gatherFlags, goDuration, resolveCaptureConfig, resolveRunConfig } from './config.ts';
import { iptablesFlags } from './flags.ts';

const resolve = (cli: Record<string, string>, env: Record<string, string> = {}) => resolveCaptureConfig(gatherFlags(cli, env), env);

function rejects(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof AgentError, String(error));
    assert.equal(error.exitCode, 2);
    assert.match(error.message, message);
    return true;
  });
}

describe('gatherFlags: every flag from the command line, else its env vars, as Istio binds them', () => {
  it('binds every flag but -p to its long name upper-cased', () => {
    for (const flag of iptablesFlags) {
      assert.equal(flag.env, flag.long === 'envoy-port' ? undefined : flag.long.toUpperCase().replace(/-/g, '_'), flag.long);
    }
  });

  it('takes the command line over the env, and the extra env var over the plain one', () => {
    const env = {
      ISTIO_INBOUND_PORTS: '80',
      DUAL_STACK: 'false',
      ISTIO_DUAL_STACK: 'true',
      INVALID_DROP: 'true',
      ISTIO_META_DNS_CAPTURE: 'true',
      REDIRECT_DNS: 'false',
    };
    const given = gatherFlags({ 'istio-inbound-ports': '*' }, env);
    assert.deepEqual(given['istio-inbound-ports'], { text: '*', name: '-b' });
    assert.deepEqual(given['dual-stack'], { text: 'true', name: 'env ISTIO_DUAL_STACK' });
    assert.deepEqual(given['drop-invalid'], { text: 'true', name: 'env INVALID_DROP' });
    assert.deepEqual(given['redirect-dns'], { text: 'true', name: 'env ISTIO_META_DNS_CAPTURE' });
    assert.deepEqual(given['inbound-tunnel-port'], { text: '15008', name: '--inbound-tunnel-port' });
  });

  it('reads every setting the env can give', () => {
    const config = resolve({}, {
      INBOUND_CAPTURE_PORT: '16006', INBOUND_TUNNEL_PORT: '16008', PROXY_UID: '1500', PROXY_GID: '1600',
      ISTIO_INBOUND_INTERCEPTION_MODE: 'TPROXY', ISTIO_INBOUND_PORTS: '80', ISTIO_EXCLUDE_INTERFACES: 'eth1',
      ISTIO_SERVICE_CIDR: '10.0.0.0/8,fd00::/8', ISTIO_SERVICE_EXCLUDE_CIDR: '10.1.0.0/16', ISTIO_OUTBOUND_PORTS: '443',
      ISTIO_LOCAL_OUTBOUND_PORTS_EXCLUDE: '25', KUBE_VIRT_INTERFACES: 'veth0', ISTIO_INBOUND_TPROXY_MARK: '7',
      ISTIO_INBOUND_TPROXY_ROUTE_TABLE: '8', CAPTURE_ALL_DNS: 'true', ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: '127.0.0.1/8',
    });
    assert.equal(config.inboundCapturePort, 16006);
    assert.equal(config.inboundTunnelPort, 16008);
    assert.deepEqual([config.proxyUids, config.proxyGids], [['1500'], ['1600']]);
    assert.equal(config.mode, 'TPROXY');
    assert.deepEqual(config.inboundPorts, [80]);
    assert.deepEqual(config.excludedInterfaces, ['eth1']);
    assert.deepEqual(config.includedOutboundCidrs, { v4: ['10.0.0.0/8'], v6: ['fd00::/8'] });
    assert.deepEqual(config.excludedOutboundCidrs, { v4: ['10.1.0.0/16'], v6: [] });
    assert.deepEqual([config.includedOutboundPorts, config.excludedOutboundPorts], [[443], [25]]);
    assert.deepEqual(config.virtualInterfaces, ['veth0']);
    assert.deepEqual([config.tproxyMark, config.tproxyRouteTable, config.captureAllDns], [7, 8, true]);
    assert.equal(config.loopbackCidr, '127.0.0.1/8');
  });

  it('reads the run flags from the env too', () => {
    const run = resolveRunConfig(
      gatherFlags(
        {},
        {
          DRY_RUN: 'true',
          RECONCILE: '1',
          CLEANUP_ONLY: 'T',
          FORCE_APPLY: 'false',
          RUN_VALIDATION: 'true',
          SKIP_RULE_APPLY: 'true',
          IPTABLES_PROBE_PORT: '15003',
          PROBE_TIMEOUT: '1m30s',
          FORCE_IPTABLES_BINARY: 'legacy',
        },
      ),
    );
    assert.deepEqual(run, {
      nativeNftables: false,
      dryRun: true,
      skipRuleApply: true,
      runValidation: true,
      reconcile: true,
      cleanupOnly: true,
      forceApply: false,
      binaryVariant: 'legacy',
      probePort: 15003,
      probeTimeoutMs: 90_000,
    });
  });
});

describe('resolveCaptureConfig', () => {
  it('takes the defaults, the UID of ENVOY_USER, and lets the GIDs follow the UIDs', () => {
    const config = resolveCaptureConfig(gatherFlags({}, {}), { ENVOY_USER: 'envoy' }, (name) => (name === 'envoy' ? '101' : undefined));
    assert.deepEqual([config.proxyUids, config.proxyGids], [['101'], ['101']]);
    assert.deepEqual(resolve({}).proxyUids, ['1337'], 'no such user: 1337');
    assert.equal(resolve({}).outboundCapturePort, 15001);
    assert.deepEqual(resolve({}).includedOutboundCidrs, { v4: [], v6: [] });
    assert.deepEqual(resolve({}).ownerGroups, { except: true, values: [] });
  });

  it('reads lists with spaces, duplicates, empty items and both families', () => {
    const config = resolve({ 'istio-inbound-ports': ' 80, 443,,80 ', 'istio-service-exclude-cidr': '10.0.0.0/8, 1.2.3.4, fd00::1', 'proxy-uid': '3,4' });
    assert.deepEqual(config.inboundPorts, [80, 443]);
    assert.deepEqual(config.excludedOutboundCidrs, { v4: ['10.0.0.0/8', '1.2.3.4/32'], v6: ['fd00::1/128'] });
    assert.deepEqual(config.proxyUids, ['3', '4']);
  });

  it('allows excluding ports under a wildcard capture', () => {
    assert.deepEqual(resolve({ 'istio-inbound-ports': '*', 'istio-local-exclude-ports': '15020' }).excludedInboundPorts, [15020]);
  });

  const bad: [string, Record<string, string>, Record<string, string>, RegExp][] = [
    ['a port out of range', { 'envoy-port': '70000' }, {}, /^-p: port "70000" is not an integer from 1 to 65535$/],
    ['port 0', { 'istio-inbound-ports': '0' }, {}, /^-b: port "0"/],
    ['a port that is not a number', { 'istio-local-exclude-ports': '80,http' }, {}, /^-d: port "http"/],
    ['a bad port from the env, naming the env var', {}, { ISTIO_OUTBOUND_PORTS: 'x' }, /^env ISTIO_OUTBOUND_PORTS: port "x"/],
    [
      'a port both captured and excluded',
      { 'istio-inbound-ports': '80,8080', 'istio-local-exclude-ports': '8080' },
      {},
      /^-d: port 8080 is also in the captured inbound ports \(-b\)$/,
    ],
    ['an unknown mode', { 'istio-inbound-interception-mode': 'NONE' }, {}, /^-m: interception mode "NONE" is not REDIRECT or TPROXY$/],
    ['a negative UID', { 'proxy-uid': '-1' }, {}, /^-u: "-1" is not a numeric id$/],
    ['a named GID', { 'proxy-gid': 'istio' }, {}, /^-g: /],
    ['a bad range', { 'istio-service-cidr': 'fd00::/129' }, {}, /^-i: "fd00::\/129" is not an IPv4 or IPv6 address or CIDR$/],
    ['a prefix over 32', { 'istio-service-exclude-cidr': '10.0.0.0/33' }, {}, /^-x: /],
    ['excluding everything', { 'istio-service-exclude-cidr': '*' }, {}, /^-x: /],
    ['a bad interface', { 'kube-virt-interfaces': 'eth 0' }, {}, /^-k: "eth 0" is not an interface name$/],
    ['a bad excluded interface', { 'istio-exclude-interfaces': 'a/b' }, {}, /^-c: /],
    ['a boolean that is not one', { 'redirect-dns': 'yes' }, {}, /^--redirect-dns: "yes" is not true or false$/],
    ['a boolean env var that is not one', {}, { ISTIO_DUAL_STACK: 'on' }, /^env ISTIO_DUAL_STACK: "on" is not true or false$/],
    ['a mark out of range', { 'istio-inbound-tproxy-mark': '0' }, {}, /^-t: /],
    ['a loopback range that is not loopback', {}, { ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: '10.0.0.1/32' }, /^env ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: /],
    ['a group that is no name', {}, { ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE: 'a b' }, /^env ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE: /],
    ['--network-namespace', { 'network-namespace': '/var/run/netns/x' }, {}, /^--network-namespace: is not supported/],
    ['--cni-mode', { 'cni-mode': 'true' }, {}, /^--cni-mode: is not supported/],
  ];
  for (const [name, cli, env, message] of bad) {
    it(`rejects ${name} with a usage error naming it`, () => rejects(() => resolve(cli, env), message));
  }

  it('rejects bad run flags naming them', () => {
    rejects(
      () => resolveRunConfig(gatherFlags({ 'force-iptables-binary': 'iptables-legacy' }, {})),
      /^--force-iptables-binary: "iptables-legacy" is not legacy or nft$/,
    );
    rejects(() => resolveRunConfig(gatherFlags({ 'probe-timeout': '5' }, {})), /^--probe-timeout: "5" is not a duration/);
    rejects(() => resolveRunConfig(gatherFlags({ 'iptables-probe-port': '0' }, {})), /^--iptables-probe-port: /);
    rejects(() => resolveRunConfig(gatherFlags({ 'native-nftables': 'maybe' }, {})), /^--native-nftables: "maybe" is not true or false$/);
    rejects(
      () => resolveRunConfig(gatherFlags({ 'native-nftables': 'true', 'force-iptables-binary': 'nft' }, {})),
      /^--force-iptables-binary: chooses an iptables binary, but --native-nftables writes no iptables rule/,
    );
  });

  it('takes --native-nftables from the flag or from NATIVE_NFTABLES, as Istio binds it', () => {
    assert.equal(resolveRunConfig(gatherFlags({}, {})).nativeNftables, false);
    assert.equal(resolveRunConfig(gatherFlags({ 'native-nftables': 'true' }, {})).nativeNftables, true);
    assert.equal(resolveRunConfig(gatherFlags({}, { NATIVE_NFTABLES: 'true' })).nativeNftables, true);
    assert.equal(resolveRunConfig(gatherFlags({ 'native-nftables': 'false' }, { NATIVE_NFTABLES: 'true' })).nativeNftables, false);
  });

  it('reads Go durations', () => {
    for (const [text, ms] of [['5s', 5000], ['500ms', 500], ['1m30s', 90_000], ['1.5s', 1500]] as const) assert.equal(goDuration({ text, name: 'x' }), ms);
  });
});
