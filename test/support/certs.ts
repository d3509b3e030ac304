import { mkdir, mkdtemp, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export interface KeyPair {
  cert: string;
  key: string;
  /** The certificate's serial (hex), to tell rotations apart from a TLS client. */
  serial: string;
}

export interface TestCa {
  cert: string;
  /** Issues a leaf for localhost / 127.0.0.1 signed by this CA; with `uri`, a SPIFFE identity too. */
  issue(name: string, uri?: string): Promise<KeyPair>;
  close(): Promise<void>;
}

const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A throwaway CA made with the openssl CLI (EC P-256: fast to generate). */
export async function makeCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'test-ca-'));
  const [caCert, caKey] = [join(dir, 'ca.crt'), join(dir, 'ca.key')];
  await execa('openssl', ['req', '-x509', ...ec, '-keyout', caKey, '-out', caCert, '-days', '2', '-subj', '/CN=test-ca']);
  let count = 0;
  return {
    cert: await readFile(caCert, 'utf8'),
    issue: async (name, uri) => issue({ dir, caCert, caKey, name, uri, serial: `${Date.now().toString(16)}${(count++).toString(16).padStart(4, '0')}` }),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

async function issue(input: { dir: string; caCert: string; caKey: string; name: string; uri?: string; serial: string }): Promise<KeyPair> {
  const base = join(input.dir, input.serial);
  await execa('openssl', ['req', ...ec, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${input.name}`]);
  await writeFile(`${base}.ext`, `subjectAltName=DNS:localhost,IP:127.0.0.1${input.uri ? `,URI:${input.uri}` : ''}\n`);
  await execa('openssl', [
    'x509',
    '-req',
    '-in',
    `${base}.csr`,
    '-CA',
    input.caCert,
    '-CAkey',
    input.caKey,
    '-set_serial',
    `0x${input.serial}`,
    '-days',
    '2',
    '-extfile',
    `${base}.ext`,
    '-out',
    `${base}.crt`,
  ]);
  return {
    cert: await readFile(`${base}.crt`, 'utf8'),
    key: await readFile(`${base}.key`, 'utf8'),
    serial: BigInt(`0x${input.serial}`).toString(16).toUpperCase(),
  };
}

/**
 * Writes files the way Kubernetes updates a secret volume: a new timestamped
 * directory, a `..data` symlink swapped in by one rename, and per-file
 * symlinks through `..data` that never change.
 */
export async function writeSecretVolume(dir: string, files: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const version = `..${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  await mkdir(join(dir, version));
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, version, name), content);
  const previous = await readlinkOrUndefined(join(dir, '..data'));
  await symlink(version, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const name of Object.keys(files)) await symlink(join('..data', name), join(dir, name)).catch(() => undefined);
  if (previous) await rm(join(dir, previous), { recursive: true, force: true });
}

function readlinkOrUndefined(path: string): Promise<string | undefined> {
  return readlink(path).catch(() => undefined);
}

/** The sidecar's three files for a key pair issued by `ca`. */
export function sidecarFiles(ca: TestCa, pair: KeyPair): Record<string, string> {
  return { 'cert-chain.pem': pair.cert, 'key.pem': pair.key, 'root-cert.pem': ca.cert };
}

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
  await run([
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'root-cert.pem',
    '-CAkey',
    'root-key.pem',
    '-CAcreateserial',
    '-out',
    'cert-chain.pem',
    '-days',
    '2',
    '-extfile',
    'leaf.ext',
  ]);
}
