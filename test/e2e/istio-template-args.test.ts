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
const initArgs = ['istio-iptables', '-p', '15001', '-z', '15006', '-u', '1337', '-m', 'REDIRECT', '-i', '*', '-x', '', '-b', '*', '-d', '15090,15021,15020', '--log_output_level=default:info'];

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
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--applicationPorts', '8080,9090', '--availabilityZone', 'az-1', '--stsPort=15463'] });
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

  const initCases: { name: string; extra: string[]; warnings: string[]; rules: boolean }[] = [
    // --dry-run stands in for the privileges an init container has; the rules are those it would apply.
    { name: 'defaults', extra: ['--dry-run'], warnings: [], rules: true },
    { name: 'logAsJson and forceApplyIptables', extra: ['--log_as_json', '--force-apply', '--dry-run'], warnings: [], rules: true },
    { name: 'CNI enabled (validation only)', extra: ['--run-validation', '--skip-rule-apply'], warnings: ['--run-validation'], rules: false },
    { name: 'annotations for outbound ports and interfaces', extra: ['-q', '80,443', '-c', 'eth1', '--native-nftables', '--dry-run'], warnings: ['--istio-outbound-ports', '--istio-exclude-interfaces', '--native-nftables'], rules: true },
  ];

  for (const testCase of initCases) {
    it(`istio-iptables accepts the init container's arguments: ${testCase.name}`, async () => {
      const result = await execa(nodeBin, [agentBin, ...initArgs, ...testCase.extra], { reject: false, timeout: 30_000 });
      assert.equal(result.exitCode, 0, result.stderr);
      const warnings = result.stderr.split('\n').filter(Boolean);
      assert.equal(warnings.length, testCase.warnings.length, result.stderr);
      for (const [index, flag] of testCase.warnings.entries()) assert.match(warnings[index]!, new RegExp(`warning: ${flag} is accepted .* not implemented`));
      assert.equal(/-A ISTIO_INBOUND/.test(result.stdout), testCase.rules, result.stdout);
    });
  }
});
