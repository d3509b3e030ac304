import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';

export interface CsrSigner {
  root: string;
  /** Signs a CSR with openssl; `uri` overrides the SAN (to play a CA that gets it wrong). */
  sign(csr: string, options?: { uri?: string }): Promise<string>;
  /** The CA's files, for a peer (test/peers/ca-server) that signs with the same CA. */
  files: { cert: string; key: string };
  close(): Promise<void>;
}

/** A throwaway CA that signs CSRs the way istiod's does: the URI SAN the CSR asks for. */
export async function makeCsrSigner(): Promise<CsrSigner> {
  const dir = await mkdtemp(join(tmpdir(), 'test-csr-ca-'));
  const files = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  const made = execa('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    files.key,
    '-out',
    files.cert,
    '-days',
    '2',
    '-subj',
    '/O=cluster.local/CN=test-root',
  ]);
  await made.catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  let count = 0;
  return {
    root: await readFile(files.cert, 'utf8'),
    files,
    sign: async (csr, options = {}) => {
      const base = join(dir, String(count++));
      await writeFile(`${base}.csr`, csr);
      const uri = options.uri ?? (await execa('openssl', ['req', '-in', `${base}.csr`, '-noout', '-text'])).stdout.match(/URI:(\S+)/)?.[1];
      await writeFile(`${base}.ext`, `subjectAltName=URI:${uri}\n`);
      await execa('openssl', [
        'x509',
        '-req',
        '-in',
        `${base}.csr`,
        '-CA',
        files.cert,
        '-CAkey',
        files.key,
        '-CAcreateserial',
        '-days',
        '1',
        '-extfile',
        `${base}.ext`,
        '-out',
        `${base}.crt`,
      ]);
      return readFile(`${base}.crt`, 'utf8');
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * A TLS server key pair for `dnsName` (and `alsoNames`) signed by the signer's
 * CA (istiod's 15012 certificate, say), in the signer's dir: `signer.close()`
 * removes it too.
 */
export async function issueServerPair(signer: CsrSigner, dnsName: string, alsoNames: string[] = []): Promise<{ cert: string; key: string }> {
  const dir = await mkdtemp(join(dirname(signer.files.cert), 'server-pair-'));
  const [cert, key] = [join(dir, 'tls.crt'), join(dir, 'tls.key')];
  await execa('openssl', [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    join(dir, 'tls.csr'),
    '-subj',
    `/CN=${dnsName}`,
  ]);
  await writeFile(join(dir, 'tls.ext'), `subjectAltName=${[dnsName, ...alsoNames].map((name) => `DNS:${name}`).join(',')}\n`);
  await execa('openssl', [
    'x509',
    '-req',
    '-in',
    join(dir, 'tls.csr'),
    '-CA',
    signer.files.cert,
    '-CAkey',
    signer.files.key,
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    join(dir, 'tls.ext'),
    '-out',
    cert,
  ]);
  return { cert, key };
}
