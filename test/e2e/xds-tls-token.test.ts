import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertGone, startAgent, type RunningAgent } from '../support/agent.ts';
import { issueServerPair, makeCsrSigner, type CsrSigner } from '../support/csr-signer.ts';
import { startPeer, type Peer } from '../support/peer.ts';
import { freePort } from '../support/ports.ts';
import { simpleHttpService } from '../support/resources.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { pollUntil } from '../support/poll.ts';

const istiodName = 'istiod.istio-system.svc';
const token = 'projected-token';

/**
 * istiod's 15012 without istiod: the go-control-plane peer serving TLS with a
 * certificate for istiod's name and refusing any stream without the token.
 */
describe('xDS to a discovery server that wants TLS and a token (istiod\'s 15012)', () => {
  let dir: string;
  let signer: CsrSigner;
  let otherSigner: CsrSigner;
  let upstream: Upstream;
  let peer: Peer;
  let listenerPort: number;
  const files = () => ({
    root: join(dir, 'root-cert.pem'),
    wrongRoot: join(dir, 'other-root.pem'),
    token: join(dir, 'istio-token'),
    wrongToken: join(dir, 'wrong-token'),
  });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'xds-tls-token-'));
    [signer, otherSigner] = await Promise.all([makeCsrSigner(), makeCsrSigner()]);
    await Promise.all([
      writeFile(files().root, signer.root),
      writeFile(files().wrongRoot, otherSigner.root),
      writeFile(files().token, `${token}\n`),
      writeFile(files().wrongToken, 'not-it'),
    ]);
    const tls = await issueServerPair(signer, istiodName);
    upstream = await startUpstream('through istiod-shaped xDS');
    listenerPort = await freePort();
    peer = await startPeer(simpleHttpService({ listenerPort, upstreamPort: upstream.port }), {
      args: ['--tls-cert', tls.cert, '--tls-key', tls.key, '--require-token', token],
    });
  });

  after(async () => {
    await peer?.stop();
    await upstream?.close();
    await Promise.all([signer?.close(), otherSigner?.close(), rm(dir, { recursive: true, force: true })]);
  });

  async function withAgent(
    env: Record<string, string>,
    args: string[],
    check: (agent: RunningAgent) => Promise<void>,
    discoveryAddress = peer.address,
  ): Promise<void> {
    const agent = await startAgent({ discoveryAddress, env: { ISTIOD_SAN: istiodName, ...env }, args });
    try {
      await check(agent);
    } finally {
      await agent.stop('SIGTERM');
      await assertGone(agent.envoyPids());
    }
  }

  const withAgentOn = (discoveryAddress: string, args: string[], check: () => Promise<void>) =>
    withAgent({ XDS_ROOT_CA: files().root }, args, check, discoveryAddress);

  const streamEnded = (agent: RunningAgent, pattern: RegExp) =>
    agent.log.waitFor((entry) => entry.msg === 'xDS stream ended' && pattern.test(String(entry.details)), 20_000, `a stream ending with ${pattern}`);

  it('with istiod\'s root and the token, Envoy gets its config and traffic flows', { timeout: 60_000 }, async () => {
    await withAgent({ XDS_ROOT_CA: files().root }, ['--xdsTokenFile', files().token], async () => {
      const body = () => fetch(`http://127.0.0.1:${listenerPort}/`, { signal: AbortSignal.timeout(2000) }).then((response) => response.text());
      await pollUntil(body, {
        what: 'config through istiod-shaped xDS',
        timeoutMs: 20_000,
        accept: (last) => last === 'through istiod-shaped xDS',
        show: String,
      });
      assert.ok(peer.log.entries.some((entry) => entry.event === 'tls_handshake'), 'the peer saw a TLS handshake');
    });
  });

  it('a refused token ends the stream with a line that says so', { timeout: 60_000 }, async () => {
    await withAgent({ XDS_ROOT_CA: files().root }, ['--xdsTokenFile', files().wrongToken], async (agent) => {
      const line = await streamEnded(agent, /UNAUTHENTICATED/);
      assert.match(String(line.details), /token is not accepted/);
    });
  });

  it('a root istiod\'s certificate does not chain to ends in a line naming TLS and the root', { timeout: 60_000 }, async () => {
    await withAgent({ XDS_ROOT_CA: files().wrongRoot }, ['--xdsTokenFile', files().token], async (agent) => {
      const line = await streamEnded(agent, /^cannot reach the discovery server: TLS:/);
      assert.ok(String(line.details).includes(files().wrongRoot), String(line.details));
      // Node's advice to start it with --use-system-ca is not the operator's to follow.
      assert.doesNotMatch(String(line.details), /--use-system-ca|Node\.js/);
    });
  });

  it('XDS_ROOT_CA=SYSTEM trusts the OS store, as Istio does: a test CA\'s istiod is not trusted, and the line names SYSTEM', { timeout: 60_000 }, async () => {
    await withAgent({ XDS_ROOT_CA: 'SYSTEM' }, ['--xdsTokenFile', files().token], async (agent) => {
      const line = await streamEnded(agent, /^cannot reach the discovery server: TLS:/);
      assert.match(String(line.details), /not trusted .*root SYSTEM/);
    });
  });

  it('the token file is read again for a new stream: a rotated token reaches a server that wants only the new one', { timeout: 90_000 }, async () => {
    const tokenFile = join(dir, 'rotating-token');
    await writeFile(tokenFile, 'token-one\n');
    const tls = await issueServerPair(signer, istiodName);
    const fixedPort = await freePort();
    const peerArgs = (wanted: string) => ({
      address: `127.0.0.1:${fixedPort}`,
      args: ['--tls-cert', tls.cert, '--tls-key', tls.key, '--require-token', wanted],
    });
    const resources = simpleHttpService({ listenerPort: await freePort(), upstreamPort: upstream.port });
    let current: Peer | undefined = await startPeer(resources, peerArgs('token-one'));
    try {
      await withAgentOn(`127.0.0.1:${fixedPort}`, ['--xdsTokenFile', tokenFile], async () => {
        await current!.log.waitFor((entry) => entry.event === 'node', 30_000, 'a stream with the first token');
        await writeFile(tokenFile, 'token-two\n');
        // Dropping the server ends the stream; the one after it must carry the file's new content.
        await current!.stop();
        current = undefined;
        current = await startPeer(resources, peerArgs('token-two'));
        const seen = await current.log.waitFor((entry) => entry.event === 'node' || entry.event === 'token_refused', 45_000, 'a new stream after the restart');
        assert.equal(seen.event, 'node', `the new stream carried the rotated token (peer said ${JSON.stringify(seen)})`);
      });
    } finally {
      await current?.stop();
    }
  });

  it('a missing root or token file at start is bad input: exit 2 naming it', { timeout: 30_000 }, async () => {
    for (const [env, args, named] of [
      [{ XDS_ROOT_CA: join(dir, 'absent.pem') }, ['--xdsTokenFile', files().token], 'absent.pem'],
      [{ XDS_ROOT_CA: files().root }, ['--xdsTokenFile', join(dir, 'absent-token')], 'absent-token'],
    ] as const) {
      const agent = await startAgent({ discoveryAddress: peer.address, env, args: [...args] });
      const result = await agent.exited;
      await agent.stop();
      assert.equal(result.exitCode, 2, agent.stderr());
      assert.match(agent.stderr().trim(), new RegExp(`^pilot-agent: [^\\n]*${named}[^\\n]*$`));
    }
  });
});
