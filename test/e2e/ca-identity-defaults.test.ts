import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { assertGone, startAgent } from '../support/agent.ts';
import { startCaPeer, type CaPeerEvent } from '../support/ca-peer.ts';
import { issueServerPair, makeCsrSigner } from '../support/csr-signer.ts';
import { identity, startCaRig, token } from '../support/ca-rig.ts';

const istiodName = 'istiod.istio-system.svc';
const firstRequest = (log: { waitFor: (match: (entry: CaPeerEvent) => boolean, ms: number, what: string) => Promise<CaPeerEvent> }) =>
  log.waitFor((entry) => entry.event === 'request', 20_000, 'a CSR at the CA');

describe('identity defaults as Istio\'s agent: what the CA receives', () => {
  it(
    "no CA_ADDR, no paths given: the CSR goes to the discovery address with Istio's token and root read against the working directory, RSA-2048, empty subject, critical SAN",
    { timeout: 60_000 },
    async () => {
      const signer = await makeCsrSigner();
      const dir = await mkdtemp(join(tmpdir(), 'ca-defaults-'));
      try {
        // A container run as Istio's: ./var/run/secrets/... under the working directory (/ in a pod).
        const [tokenFile, rootFile] = [join(dir, 'var/run/secrets/tokens/istio-token'), join(dir, 'var/run/secrets/istio/root-cert.pem')];
        await mkdir(dirname(tokenFile), { recursive: true });
        await mkdir(dirname(rootFile), { recursive: true });
        await writeFile(tokenFile, token);
        await writeFile(rootFile, signer.root);
        const ca = await startCaPeer({ ca: signer.files, tls: await issueServerPair(signer, istiodName), token, identity });
        try {
          // istiod serves xDS and the CA on one port: here the discovery address is the CA peer, which answers xDS with nothing.
          const agent = await startAgent({
            discoveryAddress: ca.address,
            env: { POD_NAMESPACE: 'default', SERVICE_ACCOUNT: 'app', ISTIOD_SAN: istiodName },
            cwd: dir,
          });
          try {
            const request = await firstRequest(ca.log);
            assert.equal(request.identity, identity);
            assert.ok(request.serial, `the token and root were found: ${request.error}`);
            assert.deepEqual(
              [request.key, request.subject, request.sanCritical, request.certSigner, request.error],
              ['RSA-2048', '', true, undefined, undefined],
            );
          } finally {
            await agent.stop('SIGTERM');
            await assertGone(agent.envoyPids());
          }
        } finally {
          await ca.stop();
        }
      } finally {
        await signer.close();
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  const variants: { name: string; env: Record<string, string>; key: string; certSigner?: string; header?: [string, string] }[] = [
    { name: 'ECC_SIGNATURE_ALGORITHM=ECDSA with ECC_CURVE=P384', env: { ECC_SIGNATURE_ALGORITHM: 'ECDSA', ECC_CURVE: 'P384' }, key: 'EC-P-384' },
    {
      name: 'WORKLOAD_RSA_KEY_SIZE=3072, ISTIO_META_CERT_SIGNER and CA_HEADER_*',
      env: { WORKLOAD_RSA_KEY_SIZE: '3072', ISTIO_META_CERT_SIGNER: 'istio-system/signer-a', CA_HEADER_X_Tenant: 'blue' },
      key: 'RSA-3072',
      certSigner: 'istio-system/signer-a',
      header: ['x_tenant', 'blue'],
    },
  ];
  for (const variant of variants) {
    it(`${variant.name}: the CA sees it, and issues`, { timeout: 60_000 }, async () => {
      const rig = await startCaRig({ env: variant.env });
      try {
        const request = await firstRequest(rig.ca.log);
        assert.equal(request.key, variant.key);
        assert.equal(request.certSigner, variant.certSigner);
        if (variant.header) assert.equal((request.headers as Record<string, string>)[variant.header[0]!], variant.header[1]);
        assert.ok(request.serial, `issued: ${request.error}`);
      } finally {
        await rig.close();
        await assertGone(rig.agent.envoyPids());
      }
    });
  }
});
