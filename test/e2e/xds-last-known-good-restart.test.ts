import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { assertGone, startAgent, type RunningAgent } from '../support/agent.ts';
import { makeCa, type KeyPair, type TestCa } from '../support/certs.ts';
import { deferStop, suiteCleanup, tempDir } from '../support/cleanup.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { pollUntil } from '../support/poll.ts';
import { freePort } from '../support/ports.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { failures, routedService, sdsListener, secret, waitForBody } from '../support/routed-service.ts';
import { waitForSerial } from '../support/tls-rig.ts';

const secretType = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const ignoredLine = 'ignoring the kept last-known-good config file';

interface LastKnownGoodFileText {
  node: string;
  types: { typeUrl: string; response?: string; resources?: { bytes: string }[] }[];
}

/** Every protobuf payload in the kept file, decoded, as one string to search. */
const payloads = (file: LastKnownGoodFileText) =>
  file.types
    .flatMap((type) => [type.response ?? '', ...(type.resources ?? []).map((entry) => entry.bytes)])
    .map((b64) => Buffer.from(b64, 'base64').toString('latin1'))
    .join('\n');

for (const mode of ['sotw', 'delta'] as const) {
  describe(`last-known-good xDS across an agent restart (${mode})`, () => {
    const modeArgs = mode === 'delta' ? ['--deltaXds'] : ['--deltaXds=false'];
    let dir: string;
    let upstream: Upstream;
    let ca: TestCa;
    let pair: KeyPair;
    let peer: Peer | undefined;
    let peerAddress: string;
    let listenerPort: number;
    const lastKnownGoodPath = () => join(dir, 'config', 'last-known-good.json');
    const start = async () => {
      const agent = await startAgent({ discoveryAddress: peerAddress, dir, args: modeArgs });
      deferStop(cleanup, agent);
      return agent;
    };
    /** SIGKILL, and wait until its Envoys followed it (PR_SET_PDEATHSIG). */
    const kill = async (agent: RunningAgent) => {
      await agent.stop('SIGKILL');
      await assertGone(agent.envoyPids(), 15_000);
    };

    const cleanup = suiteCleanup();

    before(async () => {
      dir = await tempDir(cleanup, 'lkg-restart-');
      upstream = await startUpstream(`a (${mode})`);
      cleanup.defer(() => upstream.close());
      ca = await makeCa();
      cleanup.defer(() => ca.close());
      pair = await ca.issue('localhost');
      [listenerPort, peerAddress] = [await freePort(), `127.0.0.1:${await freePort()}`];
      // The tests start (and restart) the peer: stop the current one, after the agents.
      cleanup.defer(async () => {
        await peer?.stop();
      });
    });

    it('the kept file is written 0600 without the Secret Envoy got over ADS', async () => {
      const tlsPort = await freePort();
      peer = await startPeer(
        [
          ...routedService(listenerPort, [{ prefix: '/', cluster: 'cluster_a', port: upstream.port }]),
          sdsListener(tlsPort, 'server-cert'),
          secret('server-cert', pair),
        ],
        { address: peerAddress },
      );
      const agent = await start();
      await waitForBody(listenerPort, '/', `a (${mode})`);
      await waitForSerial(tlsPort, pair.serial);
      const file = await waitForLastKnownGoodFile(lastKnownGoodPath(), ['Listener', 'ClusterLoadAssignment', 'RouteConfiguration']);
      assert.equal((await stat(lastKnownGoodPath())).mode & 0o777, 0o600);
      assert.equal(file.types.some((type) => type.typeUrl === secretType), false, 'no Secret type on disk');
      assert.doesNotMatch(payloads(file), /PRIVATE KEY/);
      assert.ok(agent.log.find((entry) => entry.msg === 'Envoy opened an xDS stream'));
      await peer.stop();
      peer = undefined;
      await kill(agent);
    });

    it('SIGKILL the agent during the outage, start it again on the same --configPath: Envoy comes up with the kept config', async () => {
      const agent = await start();
      await agent.log.waitFor((entry) => entry.msg === 'restored the last-known-good config', 10_000, 'the restored config');
      await waitForBody(listenerPort, '/', `a (${mode})`);
      assert.deepEqual(await failures(listenerPort, '/', `a (${mode})`, 30), []);
      await kill(agent);
    });

    it('a truncated file is ignored with one log line', async () => {
      const text = await readFile(lastKnownGoodPath(), 'utf8');
      await writeFile(lastKnownGoodPath(), text.slice(0, text.length / 2), { mode: 0o600 });
      try {
        await expectIgnored(/not a kept-config file/);
      } finally {
        // The next test reads this file: it gets it back also when this one fails.
        await writeFile(lastKnownGoodPath(), text, { mode: 0o600 });
      }
    });

    it('a file written for another node id is ignored', async () => {
      const file = JSON.parse(await readFile(lastKnownGoodPath(), 'utf8')) as LastKnownGoodFileText;
      await writeFile(lastKnownGoodPath(), JSON.stringify({ ...file, node: `${file.node}-other` }), { mode: 0o600 });
      await expectIgnored(/another node/);
    });

    /** Starts an agent (peer down): one "ignoring" line with the reason, nothing restored; then kills it. */
    async function expectIgnored(reason: RegExp): Promise<void> {
      const agent = await start();
      const line = await agent.log.waitFor((entry) => entry.msg === ignoredLine, 10_000, 'the ignored file');
      assert.match(String(line.reason), reason);
      await agent.log.waitFor((entry) => entry.msg === 'xDS relay listening', 10_000, 'the relay');
      assert.equal(agent.log.entries.filter((entry) => entry.msg === ignoredLine).length, 1);
      assert.equal(agent.log.find((entry) => entry.msg === 'restored the last-known-good config'), undefined);
      // SIGTERM, not SIGKILL: this agent may have just spawned Envoy, which sets PR_SET_PDEATHSIG only
      // once it runs; a SIGKILL in that window leaves it to the next agent's leftover check.
      await agent.stop('SIGTERM');
      await assertGone(agent.envoyPids(), 15_000);
    }
  });
}

/** Polls the kept file until it holds every type named. */
async function waitForLastKnownGoodFile(path: string, types: string[], timeoutMs = 30_000): Promise<LastKnownGoodFileText> {
  const read = () => readFile(path, 'utf8').then((text) => JSON.parse(text) as LastKnownGoodFileText);
  const holdsAll = (file: LastKnownGoodFileText) => types.every((type) => file.types.some((entry) => entry.typeUrl.endsWith(`.${type}`)));
  return pollUntil(read, {
    what: `${path} to hold ${types.join(', ')}`,
    timeoutMs,
    accept: holdsAll,
    show: (file) => file.types.map((entry) => entry.typeUrl).join(', '),
  });
}
