import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { keepAlive, type KeepaliveOptions } from '../../grpc/keepalive.ts';
import { grpcContentType } from '../../grpc/server-call.ts';
import { boundedTimer } from '../../shared/clock.ts';
import { withoutNodeHints } from '../../shared/errors.ts';
import { formatHostPort } from '../../shared/host-port.ts';
import { agentVersion } from '../../shared/version.ts';
import { classifyTlsFailure, type HeldCertificateChoice, type TlsFailure, type UpstreamCredential } from './credentials.ts';
import { loadMaterial, xdsRootOf, type UpstreamMaterial, type UpstreamOptions } from './material.ts';

const mib = 1024 * 1024;

/**
 * A 16 MiB HTTP/2 window, as Envoy's own xDS cluster: with the 64 KiB
 * default a large response takes much longer (docs/benchmarks.md). It is
 * also the most a stalled Envoy makes the relay hold per stream (the server
 * waits for the window).
 */
export const upstreamWindowBytes = 16 * mib;
/** A server that takes longer than this to accept and finish TLS counts as down. */
const connectTimeoutMs = 10_000;

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
    'content-type': grpcContentType,
    te: 'trailers',
    'grpc-accept-encoding': 'identity',
    'user-agent': `pilot-agent/${agentVersion()}`,
    ...options.metadata,
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
  const because = `${error.code}: ${withoutNodeHints(error.message.split('\n')[0]!).trim()}`;
  const messages: Record<TlsFailure, () => string> = {
    'server-not-trusted': () => {
      const root = xdsRootOf(options);
      return `TLS: the discovery server's certificate is not trusted (${because}); root ${root}, expected name ${options.serverName ?? options.address.host}`;
    },
    'client-certificate-refused': () =>
      `TLS: the discovery server refused our client certificate (${because}); ` +
        `${material.held.present ? 'the workload certificate from the CA' : `files in ${options.certDir}`}`,
    'client-certificate-required': () => `TLS: the discovery server wants a client certificate and the agent holds none yet (${because})`,
  };
  return new UpstreamDialError(tls ? messages[tls]() : withoutNodeHints(error.message), { cause: error, credential: material.credential, tls });
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
    ? tlsConnect({
        host: address.host,
        port: address.port,
        ...material.tls,
        servername: serverName ?? (isIP(address.host) ? undefined : address.host),
        ALPNProtocols: ['h2'],
      })
    : netConnect({ host: address.host, port: address.port });
  socket.setNoDelay(true); // an ACK is one small write: it must not wait behind Nagle
  return socket;
}
