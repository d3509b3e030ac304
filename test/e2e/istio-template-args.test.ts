import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { assertGone, startAgent } from '../support/agent.ts';
import { agentBin, nodeBin } from '../support/paths.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';

/**
 * The arguments of Istio's injection template (istio/istio master, Aug 2026,
 * manifests/charts/istio-control/istio-discovery/files/injection-template.yaml)
 * with the chart's default values, plus the optional ones (global.sts.servicePort,
 * global.logAsJson, global.proxy.outlierLogPath) switched on.
 */
const proxyTemplateArgs = [
  '--domain', 'default.svc.cluster.local',
  '--proxyLogLevel=warning',
  '--proxyComponentLogLevel=misc:error',
  '--log_output_level=default:info',
  '--stsPort=15463',
  '--log_as_json',
  '--outlierLogPath=/dev/stdout',
];

/** The init container's arguments: defaults, then the CNI and logAsJson/forceApply variants. */
const initArgs = [
  'istio-iptables',
  '-p',
  '15001',
  '-z',
  '15006',
  '-u',
  '1337',
  '-m',
  'REDIRECT',
  '-i',
  '*',
  '-x',
  '',
  '-b',
  '*',
  '-d',
  '15090,15021,15020',
  '--log_output_level=default:info',
];

describe("Istio's current injection template arguments", () => {
  let peer: Peer;

  before(async () => {
    peer = await startPeer(simpleHttpService({ listenerPort: await freePort(), upstreamPort: await freePort() }));
  });

  after(() => peer.stop());

  it('proxy sidecar starts Envoy with them, warning once for each flag it does not implement', async () => {
    // The harness adds only what a test needs on top: its own ports, paths and peer.
    const agent = await startAgent({ discoveryAddress: peer.address, args: proxyTemplateArgs, env: { POD_NAMESPACE: 'default' } });
    try {
      await agent.log.waitFor((entry) => entry.msg === 'epoch live' || entry.msg === 'envoy started', 30_000, 'Envoy to start');
      const node = await peer.log.waitFor((entry) => entry.event === 'node', 30_000, 'the node');
      assert.equal(node.node, 'sidecar~127.0.0.1~127.0.0.1~default.svc.cluster.local', '--domain is used');
      const warned = agent.log.entries.filter((entry) => entry.level === 40 && typeof entry.flag === 'string').map((entry) => entry.flag);
      assert.deepEqual(warned.sort(), ['outlierLogPath', 'stsPort'], 'one warning per unimplemented flag');
    } finally {
      assert.equal((await agent.stop('SIGTERM')).exitCode, 0, agent.stderr());
      await assertGone(agent.envoyPids());
    }
  });

  it('old Istio flags (--applicationPorts, --availabilityZone) are accepted with one warning line each naming the flag', async () => {
    const agent = await startAgent({
      discoveryAddress: peer.address,
      args: ['--applicationPorts', '8080,9090', '--availabilityZone', 'az-1', '--stsPort=15463'],
    });
    try {
      await agent.log.waitFor((entry) => entry.msg === 'envoy started', 30_000, 'Envoy to start');
      const warnings = agent.log.entries.filter((entry) => entry.level === 40);
      const byFlag = (flag: string) => warnings.filter((entry) => entry.flag === flag);
      for (const flag of ['applicationPorts', 'availabilityZone']) {
        assert.equal(byFlag(flag).length, 1, `one warning for --${flag}: ${JSON.stringify(warnings)}`);
        assert.equal(byFlag(flag)[0]!.msg, 'flag is obsolete and ignored');
      }
      assert.equal(byFlag('stsPort').length, 1, 'an unimplemented flag is warned about too');
      assert.match(byFlag('stsPort')[0]!.msg, /not implemented; ignored/);
    } finally {
      assert.equal((await agent.stop('SIGTERM')).exitCode, 0, agent.stderr());
    }
  });

  /**
   * Each case runs in a network namespace of its own with loopback only, as
   * an init container's view would be without the pod's interfaces: what the
   * host's addresses (IPv6 or not) would add is out of the picture.
   */
  const initCases: { name: string; extra: string[]; exitCode: number; stderr: RegExp; stdout: RegExp[] }[] = [
    // --dry-run stands in for the privileges an init container has; the rules are those it would apply.
    { name: 'defaults', extra: ['--dry-run'], exitCode: 0, stderr: /^$/, stdout: [/^-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT$/m] },
    {
      name: 'logAsJson and forceApplyIptables',
      extra: ['--log_as_json', '--force-apply', '--dry-run'],
      exitCode: 0,
      stderr: /^$/,
      stdout: [/^-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT$/m],
    },
    // Nothing applied the rules here, so Istio's validation fails with its own exit code.
    {
      name: 'CNI enabled (validation only)',
      extra: ['--run-validation', '--skip-rule-apply', '--probe-timeout', '1s'],
      exitCode: 126,
      stderr: /^pilot-agent istio-iptables: validation failed: [^\n]*$/,
      stdout: [/^$/],
    },
    {
      name: 'annotations for outbound ports and interfaces',
      extra: ['-q', '80,443', '-c', 'eth1', '-k', 'veth0', '--dry-run'],
      exitCode: 0,
      stderr: /^$/,
      stdout: [
        /^-A ISTIO_OUTPUT -p tcp --dport 443 -j ISTIO_REDIRECT$/m,
        /^-A PREROUTING -i eth1 -j RETURN$/m,
        /^-I PREROUTING 1 -i veth0 -j ISTIO_REDIRECT$/m,
      ],
    },
    {
      name: 'nativeNftables',
      extra: ['--native-nftables', '--dry-run'],
      exitCode: 0,
      stderr: /^$/,
      stdout: [/^# nft -f -$/m, /^add rule inet istio-proxy-nat istio-inbound meta l4proto tcp counter jump istio-in-redirect$/m],
    },
  ];
  const initSkip = process.getuid?.() === 0 ? false : 'needs root for a network namespace of its own';

  for (const testCase of initCases) {
    it(`istio-iptables takes the init container's arguments: ${testCase.name}`, { skip: initSkip }, async () => {
      const ns = `pa-init-${process.pid}`;
      await execa('ip', ['netns', 'add', ns]);
      try {
        await execa('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
        const result = await execa('ip', ['netns', 'exec', ns, nodeBin, agentBin, ...initArgs, ...testCase.extra], { reject: false, timeout: 30_000 });
        assert.equal(result.exitCode, testCase.exitCode, result.stderr);
        assert.match(result.stderr, testCase.stderr);
        assert.doesNotMatch(result.stderr, /not implemented|ignored/, 'no flag is accepted and ignored');
        for (const pattern of testCase.stdout) assert.match(result.stdout, pattern);
      } finally {
        await execa('ip', ['netns', 'del', ns], { reject: false });
      }
    });
  }
});
