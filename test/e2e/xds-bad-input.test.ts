import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { makeCa, sidecarFiles, writeSecretVolume } from '../support/certs.ts';
import { tempDir } from '../support/cleanup.ts';

/** Runs the agent expecting exit 2 before any Envoy starts; returns stderr. */
async function expectUsageError(args: string[], discoveryAddress = '127.0.0.1:1'): Promise<string> {
  const agent = await startAgent({ discoveryAddress, args });
  const result = await agent.exited;
  await agent.stop();
  assert.equal(result.exitCode, 2, agent.stderr());
  assert.deepEqual(agent.envoyPids(), []);
  await assertGone(agent.envoyPids());
  return agent.stderr();
}

describe('xDS upstream settings are checked at start (exit 2, one line naming the culprit)', () => {
  it('a discovery address that does not parse', async () => {
    assert.match(await expectUsageError([], 'no-port-here'), /--discoveryAddress: "no-port-here" is not host:port/);
  });

  it('MUTUAL_TLS with neither our certificate nor a token', async () => {
    assert.match(await expectUsageError(['--controlPlaneAuthPolicy', 'MUTUAL_TLS']), /--xdsTokenFile: cannot read \.\/var\/run\/secrets\/tokens\/istio-token \(ENOENT\)/);
  });

  it('MUTUAL_TLS with a key that does not match the certificate', async () => {
    await using cleanup = new AsyncDisposableStack();
    const dir = await tempDir(cleanup, 'xds-bad-certs-');
    const ca = await makeCa();
    cleanup.defer(() => ca.close());
    const [first, second] = [await ca.issue('a'), await ca.issue('b')];
    await writeSecretVolume(dir, { ...sidecarFiles(ca, first), 'key.pem': second.key });
    const stderr = await expectUsageError(['--controlPlaneAuthPolicy', 'MUTUAL_TLS', '--certDir', dir]);
    assert.match(stderr, /key\.pem: does not match the certificate in cert-chain\.pem/);
  });

  it('a token file that cannot be read', async () => {
    assert.match(await expectUsageError(['--xdsTokenFile', '/nonexistent/istio-token']), /--xdsTokenFile: cannot read \/nonexistent\/istio-token \(ENOENT\)/);
  });
});
