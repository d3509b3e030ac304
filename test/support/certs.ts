import { mkdir, writeFile } from 'node:fs/promises';
import { execa } from 'execa';

/**
 * Writes a CA and a leaf certificate for `name` (CN and DNS SAN) into `dir`
 * with openssl, under Istio's file names: root-cert.pem, cert-chain.pem,
 * key.pem (plus root-key.pem to sign more).
 */
export async function writeTestCerts(dir: string, name: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const run = (args: string[]) => execa('openssl', args, { cwd: dir });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run(['req', '-x509', ...ec, '-keyout', 'root-key.pem', '-out', 'root-cert.pem', '-subj', '/CN=test-root', '-days', '2']);
  await run(['req', ...ec, '-keyout', 'key.pem', '-out', 'leaf.csr', '-subj', `/CN=${name}`]);
  await writeFile(`${dir}/leaf.ext`, `subjectAltName=DNS:${name}\n`);
  await run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'root-cert.pem', '-CAkey', 'root-key.pem', '-CAcreateserial', '-out', 'cert-chain.pem', '-days', '2', '-extfile', 'leaf.ext']);
}
