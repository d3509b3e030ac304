import { createPrivateKey, X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type OutgoingHttpHeaders } from 'node:http2';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { getCACertificates, connect as tlsConnect } from 'node:tls';
import { badFile, badFlag } from '../shared/errors.ts';
import { formatHostPort, type HostPort } from '../shared/host-port.ts';
import { agentVersion } from '../shared/version.ts';
import { chooseHeldCertificate, classifyTlsFailure, credentialLabel, type HeldCertificate, type HeldCertificateChoice, type TlsFailure, type UpstreamCredential } from './client-credential.ts';
import { keepAlive, type KeepaliveOptions } from '../grpc/keepalive.ts';
import { boundedTimer } from '../shared/clock.ts';
import { readBoundedFile, readFailure } from '../shared/bounded-file.ts';
import { certFileNames } from '../shared/istio-files.ts';
import { certFileMaxBytes } from '../watch/cert-set.ts';

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
  /** TLS: the workload certificate the agent holds now (from the CA, in memory), presented as ours. */
  heldCertificate?: () => HeldCertificate | undefined;
}

const mib = 1024 * 1024;

/**
 * A 16 MiB HTTP/2 window, as Envoy's own xDS cluster: with the 64 KiB
 * default a 10 MB response takes ~3× longer. It is also the most a stalled
 * Envoy makes the relay hold per stream (the server waits for the window).
 */
export const upstreamWindowBytes = 16 * mib;
/** A server that takes longer than this to accept and finish TLS counts as down. */
const connectTimeoutMs = 10_000;

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
 */
export async function loadMaterial(options: UpstreamOptions, now = Date.now()): Promise<UpstreamMaterial> {
  const held = chooseHeldCertificate(options.policy, options.heldCertificate?.(), now);
  const headers: OutgoingHttpHeaders = {};
  let tokenProblem: string | undefined;
  if (options.tokenFile) {
    const token = await readText(options.tokenFile, '--xdsTokenFile').catch((error: Error) => {
      if (!held.present) throw error;
      tokenProblem = error.message;
    });
    if (token !== undefined) headers.authorization = `Bearer ${token.trim()}`;
  }
  const base = { headers, held, tokenProblem, credential: credentialLabel(held.present || options.policy === 'MUTUAL_TLS', headers.authorization !== undefined) };
  if (options.policy === 'NONE') return { tls: undefined, ...base };
  if (options.policy === 'TLS') {
    const ca = await readRoot(options.rootCaFile!);
    return { tls: held.present ? { ca, cert: held.certificate.chain, key: held.certificate.key } : { ca }, ...base };
  }
  // One after the other: with several files missing, the error names the same one every time.
  const files = {} as Record<keyof typeof certFileNames, Buffer>;
  for (const [key, name] of Object.entries(certFileNames) as [keyof typeof certFileNames, string][]) {
    files[key] = await readCert(join(options.certDir, name));
  }
  checkKeyPair(options.certDir, files.chain, files.key, files.root);
  return { tls: { cert: files.chain, key: files.key, ca: files.root }, ...base };
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
    throw badFile(path, `cannot read (${readFailure(error)}); needed by --controlPlaneAuthPolicy MUTUAL_TLS`, error);
  }
}

/** A key that does not match its certificate would only fail at handshake time, far from the cause. */
function checkKeyPair(certDir: string, chain: Buffer, key: Buffer, root: Buffer): void {
  const parse = <T>(file: string, make: () => T): T => {
    try {
      return make();
    } catch (error) {
      throw badFile(join(certDir, file), `not a PEM ${file === certFileNames.key ? 'private key' : 'certificate'}`, error);
    }
  };
  const cert = parse(certFileNames.chain, () => new X509Certificate(chain));
  const privateKey = parse(certFileNames.key, () => createPrivateKey(key));
  parse(certFileNames.root, () => new X509Certificate(root));
  if (!cert.checkPrivateKey(privateKey)) throw badFile(join(certDir, certFileNames.key), `does not match the certificate in ${certFileNames.chain}`);
}

export interface UpstreamStream {
  stream: ClientHttp2Stream;
  /** What the connection proves us with, and why the token or the held certificate stayed home. */
  credential: UpstreamCredential;
  held: HeldCertificateChoice;
  tokenProblem?: string;
  /** Cancels the stream if still open and closes its connection. */
  close(): void;
}

/** A dial that failed, with the credential it tried; `tls` says how the handshake failed, when it did. */
export class UpstreamDialError extends Error {
  readonly credential: UpstreamCredential;
  readonly tls: TlsFailure | undefined;
  constructor(message: string, options: { cause: unknown; credential: UpstreamCredential; tls?: TlsFailure }) {
    super(message, { cause: options.cause });
    this.credential = options.credential;
    this.tls = options.tls;
  }
}

export interface DialOptions {
  /** The ADS method's path. */
  path: string;
  keepalive: KeepaliveOptions;
  /** ms since the epoch: the held certificate is left out once expired. */
  now: number;
}

/**
 * A fresh connection with the files as they are now, and an ADS call on it
 * (request headers sent, no message yet). Rejects when the server cannot be
 * reached or the TLS handshake fails (an UpstreamDialError once the material is read).
 */
export async function dialUpstream(options: UpstreamOptions, dial: DialOptions): Promise<UpstreamStream> {
  const material = await loadMaterial(options, dial.now);
  const session = await openSession(options, material).catch((error: NodeJS.ErrnoException) => {
    throw dialError(options, material, error);
  });
  keepAlive(session, dial.keepalive);
  const stream = session.request({
    ':method': 'POST',
    ':path': dial.path,
    ':authority': options.serverName ?? formatHostPort(options.address),
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-accept-encoding': 'identity',
    'user-agent': `pilot-agent/${agentVersion()}`,
    ...material.headers,
  });
  stream.on('error', () => undefined); // the relay reads every ending from 'close'
  return {
    stream,
    credential: material.credential,
    held: material.held,
    tokenProblem: material.tokenProblem,
    close: () => {
      if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      session.close();
      // A peer that never answers the GOAWAY does not keep the socket.
      boundedTimer(() => session.destroy(), 1_000, { unref: true });
    },
  };
}

/** Names what to fix: the root and name we check the server with, or the certificate it refused. */
function dialError(options: UpstreamOptions, material: UpstreamMaterial, error: NodeJS.ErrnoException): UpstreamDialError {
  const presented = material.tls?.cert !== undefined;
  const tls = material.tls ? classifyTlsFailure(error.code, presented) : undefined;
  const because = `${error.code}: ${error.message.split('\n')[0]!.trim()}`;
  const messages: Record<TlsFailure, () => string> = {
    'server-not-trusted': () => {
      const root = options.policy === 'MUTUAL_TLS' ? join(options.certDir, certFileNames.root) : options.rootCaFile;
      return `TLS: the discovery server's certificate is not trusted (${because}); root ${root}, expected name ${options.serverName ?? options.address.host}`;
    },
    'client-certificate-refused': () => `TLS: the discovery server refused our client certificate (${because}); ${options.policy === 'MUTUAL_TLS' ? `files in ${options.certDir}` : 'the workload certificate from the CA'}`,
    'client-certificate-required': () => `TLS: the discovery server wants a client certificate and the agent holds none yet (${because})`,
  };
  return new UpstreamDialError(tls ? messages[tls]() : error.message, { cause: error, credential: material.credential, tls });
}

async function openSession(options: UpstreamOptions, material: UpstreamMaterial): Promise<ClientHttp2Session> {
  const scheme = material.tls ? 'https' : 'http';
  let socketFailed: (error: Error) => void = () => undefined;
  const session = connect(`${scheme}://${formatHostPort(options.address)}`, {
    settings: { initialWindowSize: upstreamWindowBytes },
    maxSessionMemory: 256,
    createConnection: () => openSocket(options, material).once('error', (error) => socketFailed(error)),
  });
  // Later session errors also end the stream, which is where they are handled.
  session.on('error', () => undefined);
  // Over TLS 1.3 the server judges our certificate after our side of the
  // handshake is done: its first SETTINGS frame, not 'connect', says it took us.
  const accepted = material.tls ? 'remoteSettings' : 'connect';
  await new Promise<void>((resolve, reject) => {
    // Rejected here too: a session whose socket already died ignores destroy() and emits nothing.
    const timer = boundedTimer(() => (session.destroy(), reject(new Error(`no connection within ${connectTimeoutMs} ms`))), connectTimeoutMs);
    session.once(accepted, () => (timer.cancel(), resolve()));
    session.once('error', (error) => (timer.cancel(), reject(error)));
    // An alert after the handshake (our certificate refused) reaches the socket, not always the session.
    socketFailed = (error) => (timer.cancel(), session.destroy(), reject(error));
    session.once('close', () => (timer.cancel(), reject(new Error('the discovery server closed the connection before answering'))));
  });
  session.setLocalWindowSize(upstreamWindowBytes);
  return session;
}

/** The TCP or TLS socket under a session; Node's http2 forbids tuning it once the session owns it. */
function openSocket({ address, serverName }: UpstreamOptions, material: UpstreamMaterial): Socket {
  const socket = material.tls
    ? tlsConnect({ host: address.host, port: address.port, ...material.tls, servername: serverName ?? (isIP(address.host) ? undefined : address.host), ALPNProtocols: ['h2'] })
    : netConnect({ host: address.host, port: address.port });
  socket.setNoDelay(true); // an ACK is one small write: it must not wait behind Nagle
  return socket;
}
