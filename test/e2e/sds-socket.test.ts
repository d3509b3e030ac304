import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { startAgent } from '../support/agent.ts';
import { deferStop, tempDir } from '../support/cleanup.ts';
import { agentBin, envoyBin, nodeBin } from '../support/paths.ts';
import { startPeer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { sdsHttpsService } from '../support/sds-rig.ts';

describe('the SDS socket', () => {
  it('a socket another process serves (SPIRE) is used by Envoy, not replaced', { timeout: 60_000 }, async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'spire-');
    const socket = join(dir, 'socket');
    const open = new Set<Socket>();
    let connections = 0;
    const spire = createServer((connection) => {
      connections++;
      open.add(connection.on('error', () => undefined).on('close', () => open.delete(connection)));
    });
    await new Promise<void>((resolve) => spire.listen(socket, resolve));
    cleanup.defer(() => new Promise<void>((resolve) => {
      for (const connection of open) connection.destroy();
      spire.close(() => resolve());
    }));
    const peer = await startPeer(sdsHttpsService({ listenerPort: await freePort(), upstreamPort: 9 }));
    cleanup.defer(() => peer.stop());
    const agent = await startAgent({ discoveryAddress: peer.address, args: ['--sdsSocket', socket] });
    deferStop(cleanup, agent);
    await agent.log.waitFor(
      (entry) => entry.msg === 'SDS socket is served by another process; Envoy reads its certificates there',
      10_000,
      'the agent to leave the socket alone',
    );
    // The stand-in speaks no SDS, so Envoy's listener keeps warming: wait for Envoy, not for LIVE.
    await agent.log.waitFor((entry) => entry.msg === 'envoy started', 10_000, 'Envoy to start');
    for (let i = 0; i < 100 && connections < 2; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(connections >= 2, `Envoy connected to the other process's socket (connections: ${connections}, one is the agent's probe)`);
    assert.equal(agent.log.entries.some((entry) => entry.msg === 'SDS server listening'), false);
  });

  it('a path that is not a socket is bad input: exit 2, one line naming --sdsSocket', { timeout: 30_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sds-flag-'));
    try {
      await writeFile(join(dir, 'socket'), 'a file');
      const result = await execa(
        nodeBin,
        [
          agentBin,
          'proxy',
          'sidecar',
          '--serviceregistry',
          'Other',
          '--ip',
          '127.0.0.1',
          '--configPath',
          join(dir, 'config'),
          '--certDir',
          join(dir, 'certs'),
          '--binaryPath',
          envoyBin,
          '--discoveryAddress',
          '127.0.0.1:1',
          '--proxyAdminPort',
          String(await freePort()),
          '--statusPort',
          '0',
          '--sdsSocket',
          join(dir, 'socket'),
        ],
        { reject: false, timeout: 20_000 },
      );
      assert.equal(result.exitCode, 2, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, /--sdsSocket: .*exists and is not a socket/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
