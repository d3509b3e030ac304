import { createPrivateKey, X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import type { OutgoingHttpHeaders } from 'node:http2';
import { getCACertificates } from 'node:tls';
import { readBoundedFile, readFailure } from '../../shared/bounded-file.ts';
import { AgentError, badFile, badFlag } from '../../shared/errors.ts';
import type { HostPort } from '../../shared/host-port.ts';
import { certFileNames } from '../../shared/istio-files.ts';
import { certFileMaxBytes } from '../../watch/cert-set.ts';
import { chooseHeldCertificate, credentialLabel, type HeldCertificate, type HeldCertificateChoice, type UpstreamCredential } from './credentials.ts';

/** How the agent reaches the discovery server. */
export interface UpstreamOptions {
  address: HostPort;
  /** NONE: plaintext; TLS: istiod's 15012 (server certificate checked, the token proves us); MUTUAL_TLS: our certificate too. */
  policy: 'NONE' | 'TLS' | 'MUTUAL_TLS';
  /** MUTUAL_TLS: cert-chain.pem, key.pem, root-cert.pem; read again for every new connection. */
  certDir: string;
  /** TLS: the root the server's certificate must chain to; read again for every new connection. */
  rootCaFile?: string;
  /** TLS server name (SNI and certificate check); the address's host when absent. */
  serverName?: string;
  /** Sent as `authorization: Bearer <content>`; read again for every new stream. */
  tokenFile?: string;
  /** gRPC metadata sent on every call (ClusterID, XDS_HEADER_*), as Istio's agent does; names already lowercase. */
  metadata?: Readonly<Record<string, string>>;
  /** TLS: the workload certificate the agent holds now (from the CA, in memory), presented as ours. */
  heldCertificate?: () => HeldCertificate | undefined;
}

export interface UpstreamMaterial {
  /** The root to trust, with our certificate and key for mutual TLS; absent for plaintext. */
  tls: { cert?: Buffer; key?: Buffer; ca: Buffer | string[] } | undefined;
  /** Extra request headers: the token, when there is one. */
  headers: OutgoingHttpHeaders;
  /** What this connection proves us with. */
  credential: UpstreamCredential;
  /** Whether the held certificate goes along, and why not. */
  held: HeldCertificateChoice;
  /** Why the token is left out: unreadable while the held certificate speaks for us. */
  tokenProblem?: string;
}

/**
 * Reads the TLS files and the token now, and takes the held certificate;
 * throws AgentError naming the file at fault. With a certificate to present,
 * an unreadable token is left out rather than fatal, as Istio's token reader does.
 * MUTUAL_TLS is TLS with the token too, as Istio speaks it today: our files
 * from the cert dir go along only when they are there (pilot/pkg/grpc/tls.go).
 */
export async function loadMaterial(options: UpstreamOptions, now = Date.now()): Promise<UpstreamMaterial> {
  const files = options.policy === 'MUTUAL_TLS' ? await readClientFiles(options.certDir) : undefined;
  const held: HeldCertificateChoice = files
    ? { present: false, reason: 'cert-dir' }
    : chooseHeldCertificate(options.policy === 'NONE' ? 'NONE' : 'TLS', options.heldCertificate?.(), now);
  const headers: OutgoingHttpHeaders = {};
  let tokenProblem: string | undefined;
  if (options.tokenFile) {
    const token = await readText(options.tokenFile, '--xdsTokenFile').catch((error: Error) => {
      if (!held.present && !files) throw error;
      tokenProblem = error.message;
    });
    if (token !== undefined) headers.authorization = `Bearer ${token.trim()}`;
  }
  const base = { headers, held, tokenProblem, credential: credentialLabel(held.present || files !== undefined, headers.authorization !== undefined) };
  if (options.policy === 'NONE') return { tls: undefined, ...base };
  const ca = await readRoot(xdsRootOf(options));
  if (files) return { tls: { ca, cert: files.chain, key: files.key }, ...base };
  return { tls: held.present ? { ca, cert: held.certificate.chain, key: held.certificate.key } : { ca }, ...base };
}

/** The root istiod's certificate must chain to: the one given, else (MUTUAL_TLS, Istio 1.1) root-cert.pem beside our files. */
export const xdsRootOf = (options: UpstreamOptions): string => options.rootCaFile ?? join(options.certDir, certFileNames.root);

/**
 * Our certificate and key from the cert dir, checked; undefined when there is
 * no certificate there (a VM before its first one: the token speaks for us).
 */
async function readClientFiles(certDir: string): Promise<{ chain: Buffer; key: Buffer } | undefined> {
  const chain = await readCert(join(certDir, certFileNames.chain)).catch((error: AgentError) => {
    if ((error.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return undefined;
    throw error;
  });
  if (chain === undefined) return undefined;
  const key = await readCert(join(certDir, certFileNames.key));
  checkKeyPair(certDir, chain, key);
  return { chain, key };
}

/** A service-account token is a few KiB; past this it is not one. A FIFO or device is refused, not waited on. */
const tokenFileMaxBytes = 1024 * 1024;

async function readText(path: string, flag: string): Promise<string> {
  try {
    return (await readBoundedFile(path, { maxBytes: tokenFileMaxBytes })).toString('utf8');
  } catch (error) {
    throw badFlag(flag, `cannot read ${path} (${readFailure(error)})`, error);
  }
}

/** `--xdsRootCa SYSTEM`, as Istio spells it: the operating system's trust store instead of a file. */
export const systemRoots = 'SYSTEM';

/** The discovery server's root: a file that is not PEM would only fail at handshake time, far from the cause. */
async function readRoot(path: string): Promise<Buffer | string[]> {
  if (path === systemRoots) return systemRootCertificates();
  let root: Buffer;
  try {
    root = await readBoundedFile(path, { maxBytes: certFileMaxBytes });
  } catch (error) {
    throw badFile(path, `cannot read (${readFailure(error)}); the discovery server's TLS root (--xdsRootCa, XDS_ROOT_CA)`, error);
  }
  try {
    new X509Certificate(root);
  } catch (error) {
    throw badFile(path, 'not a PEM certificate; the discovery server\'s TLS root (--xdsRootCa, XDS_ROOT_CA)', error);
  }
  return root;
}

/** The OS store (as Go's system pool Istio uses), not the Mozilla bundle Node carries. */
function systemRootCertificates(): string[] {
  const roots = getCACertificates('system');
  if (roots.length === 0) throw badFlag('--xdsRootCa', 'SYSTEM asks for the system trust store, and it holds no certificates');
  return roots;
}

async function readCert(path: string): Promise<Buffer> {
  try {
    return await readBoundedFile(path, { maxBytes: certFileMaxBytes });
  } catch (error) {
    throw badFile(path, `cannot read (${readFailure(error)}); our client certificate for --controlPlaneAuthPolicy MUTUAL_TLS`, error);
  }
}

/** A key that does not match its certificate would only fail at handshake time, far from the cause. */
function checkKeyPair(certDir: string, chain: Buffer, key: Buffer): void {
  const parse = <T>(file: string, make: () => T): T => {
    try {
      return make();
    } catch (error) {
      throw badFile(join(certDir, file), `not a PEM ${file === certFileNames.key ? 'private key' : 'certificate'}`, error);
    }
  };
  const cert = parse(certFileNames.chain, () => new X509Certificate(chain));
  const privateKey = parse(certFileNames.key, () => createPrivateKey(key));
  if (!cert.checkPrivateKey(privateKey)) throw badFile(join(certDir, certFileNames.key), `does not match the certificate in ${certFileNames.chain}`);
}
