import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { adminClient, serverInfo } from '../../src/envoy/admin.ts';
import { assertGone, startAgent } from '../support/agent.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { epochLive, writeCrashingEnvoy } from '../support/tls-rig.ts';

/** Exactly one line on stderr, matching `pattern`. */
function assertOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, pattern);
}

async function withPeer(body: (peer: Peer) => Promise<void>): Promise<void> {
  const peer = await startPeer([]);
  try {
    await body(peer);
  } finally {
    await peer.stop();
  }
}

describe("Envoy's ports and binary are the operator's to fix: exit 2, one line", () => {
  it("a second agent given the first one's --proxyAdminPort exits 2 at once and leaves the first Envoy alone", () => withPeer(async (peer) => {
    const first = await startAgent({ discoveryAddress: peer.address });
    try {
      await epochLive(first, 0);
      const started = Date.now();
      const second = await startAgent({ discoveryAddress: peer.address, args: ['--proxyAdminPort', String(first.adminPort)] });
      const result = await second.exited;
      await second.stop();
      assert.equal(result.exitCode, 2);
      assert.ok(Date.now() - started < 10_000, 'within seconds, before any retry');
      assertOneLine(second.stderr(), new RegExp(`^pilot-agent: --proxyAdminPort: port ${first.adminPort} on 127.0.0.1 is not free \\(EADDRINUSE\\)$`));
      assert.deepEqual(second.envoyPids(), [], 'no Envoy was started');
      const info = await serverInfo(adminClient(first.adminPort));
      assert.equal(info?.state, 'LIVE', 'the first Envoy is neither drained nor stopped');
      assert.equal(info?.configPath, join(first.dir, 'config', 'envoy-rev0.json'));
    } finally {
      await first.stop();
      await assertGone(first.envoyPids());
    }
  }));

  it("when Envoy itself cannot bind (no probe: a custom bootstrap), another agent's LIVE Envoy is not taken for ours: exit 2 naming the flag", () =>
    withPeer(async (peer) => {
      await using cleanup = new AsyncDisposableStack();
      const first = await startAgent({ discoveryAddress: peer.address });
      deferStop(cleanup, first);
      const dir = await tempDir(cleanup, 'custom-bootstrap-');
      await epochLive(first, 0);
      const custom = join(dir, 'bootstrap.json');
      await writeFile(
        custom,
        JSON.stringify({
          node: { id: 'second', cluster: 'second' },
          admin: { address: { socket_address: { address: '127.0.0.1', port_value: first.adminPort } } },
        }),
      );
      const second = await startAgent({ discoveryAddress: peer.address, args: ['--customConfigFile', custom, '--proxyAdminPort', String(first.adminPort)] });
      const result = await second.exited;
      await second.stop();
      assert.equal(result.exitCode, 2, second.stderr());
      assertOneLine(
        second.stderr(),
        new RegExp(`^pilot-agent: --proxyAdminPort: Envoy cannot bind port ${first.adminPort} on 127.0.0.1 \\(Address already in use\\)$`),
      );
      assert.equal(
        second.log.find((entry) => entry.msg === 'epoch live'),
        undefined,
        "the first agent's Envoy answering on admin is not our epoch",
      );
      assert.equal(
        second.log.find((entry) => entry.msg === 'retry scheduled'),
        undefined,
        'bad input is not retried',
      );
      await assertGone(second.envoyPids());
      assert.equal((await serverInfo(adminClient(first.adminPort)))?.state, 'LIVE');
    }));

  for (const binary of ['/bin/true', '/bin/false']) {
    it(`--binaryPath ${binary}: not an Envoy, exit 2 naming --binaryPath`, async () => {
      const agent = await startAgent({ discoveryAddress: '127.0.0.1:9', args: ['--binaryPath', binary] });
      const result = await agent.exited;
      await agent.stop();
      assert.equal(result.exitCode, 2);
      assertOneLine(agent.stderr(), new RegExp(`^pilot-agent: --binaryPath: ${binary} is not an Envoy`));
    });
  }

  it('an Envoy component or level Envoy does not know: exit 2 naming --proxyComponentLogLevel, no Envoy started', async () => {
    const agent = await startAgent({ discoveryAddress: '127.0.0.1:9', args: ['--proxyComponentLogLevel', 'upstream:verbose'] });
    const result = await agent.exited;
    await agent.stop();
    assert.equal(result.exitCode, 2);
    assertOneLine(agent.stderr(), /--proxyComponentLogLevel.*'upstream:verbose'.*"verbose" is not an Envoy log level/);
    assert.deepEqual(agent.envoyPids(), []);
  });

  it('exit 1 says why on stderr too, in one line', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'crashing-');
    const agent = await startAgent({
      discoveryAddress: '127.0.0.1:9',
      args: ['--binaryPath', await writeCrashingEnvoy(dir), '--retryInitialDelay', '10ms', '--retryBudget', '1'],
    });
    deferStop(cleanup, agent);
    assert.equal((await agent.exited).exitCode, 1);
    assertOneLine(agent.stderr(), /^pilot-agent: retry budget spent trying to start Envoy with config [0-9a-f]{12}: exit code 3: .*crashing on purpose$/);
  });
});
