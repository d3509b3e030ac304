import type { Agent, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { connect as netConnect, isIP } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { http, https } from '../../shared/node-http.ts';
import type { ProbeAction } from './config.ts';
import type { ProbeNetwork } from './probe-target.ts';
import type { HopAnswer } from './redirects.ts';

type HttpAction = Extract<ProbeAction, { kind: 'http' }>;

/** One probe's HTTP GETs: its own connections, so keep-alive is per probe as in Istio. */
export interface HttpProbeClient {
  get(hop: HttpAction, signal: AbortSignal): Promise<HopAnswer>;
}

/**
 * GETs as the kubelet sends them: from the probe source address, certificates
 * not checked; HTTPS offers h2 by ALPN unless HTTP/2 probing is off. Without
 * keep-alive (the default) every GET has its own connection, closed after it;
 * with it, a probe reuses its connection (its h2 session, or one HTTP/1.1 socket).
 */
export function httpProbeClient(network: ProbeNetwork): HttpProbeClient {
  const agents = network.keepAlive ? {
    http: new http.Agent({ keepAlive: true, maxSockets: 1 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false }),
  } : undefined;
  const sessions = new Map<string, ClientHttp2Session>();
  /** HTTPS origins that answered ALPN without h2: with keep-alive, later GETs go through the HTTP/1.1 agent. */
  const http1Only = new Set<string>();

  const http1 = (hop: HttpAction, signal: AbortSignal, socket?: TLSSocket) =>
    httpOne(hop, signal, { network, agent: socket ? undefined : agents?.[hop.scheme], socket });

  const viaAlpn = async (hop: HttpAction, signal: AbortSignal): Promise<HopAnswer> => {
    const key = origin(hop);
    const kept = sessions.get(key);
    if (kept && !kept.closed && !kept.destroyed) return http2One(kept, hop, signal, false);
    const socket = await tlsOpen(hop, network.localAddress, signal);
    if (socket.alpnProtocol !== 'h2') {
      if (network.keepAlive) http1Only.add(key);
      return http1(hop, signal, socket);
    }
    const session = http2Connect(`https://${authority(hop)}`, { createConnection: () => socket });
    session.on('error', () => undefined);
    if (!network.keepAlive) return http2One(session, hop, signal, true);
    session.unref();
    sessions.set(key, session);
    session.once('close', () => sessions.get(key) === session && sessions.delete(key));
    return http2One(session, hop, signal, false);
  };

  return {
    get: (hop, signal) => (hop.scheme === 'https' && network.http2 && !http1Only.has(origin(hop)) ? viaAlpn(hop, signal) : http1(hop, signal)),
  };
}

const authority = (hop: HttpAction) => `${hop.host.includes(':') ? `[${hop.host}]` : hop.host}:${hop.port}`;
const origin = (hop: HttpAction) => `${hop.scheme}://${authority(hop)}`;

/** The kubelet's headers, then the probe's own (which may replace them). */
function probeHeaders(hop: HttpAction): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': 'kube-probe (pilot-agent)', accept: '*/*' };
  for (const [name, value] of hop.headers) headers[name.toLowerCase()] = value;
  return headers;
}

interface OneOptions {
  network: ProbeNetwork;
  agent?: Agent;
  /** A TLS socket whose ALPN chose HTTP/1.1: the GET goes on it. */
  socket?: TLSSocket;
}

function httpOne(hop: HttpAction, signal: AbortSignal, options: OneOptions): Promise<HopAnswer> {
  const headers: OutgoingHttpHeaders = probeHeaders(hop);
  if (!options.network.keepAlive) headers.connection = 'close';
  const { socket } = options;
  const request = socket || hop.scheme === 'http' ? http.request : https.request;
  return new Promise((resolve, reject) => {
    const outgoing = request({
      host: hop.host, port: hop.port, path: hop.path, method: 'GET', headers, signal,
      localAddress: options.network.localAddress, rejectUnauthorized: false,
      // With a socket of ours, no agent at all: node:http ignores createConnection when there is one.
      ...(socket ? { createConnection: () => socket } : { agent: options.agent ?? false }),
    }, (response: IncomingMessage) => {
      response.resume();
      response.once('end', () => resolve({ status: response.statusCode ?? 500, location: response.headers.location }));
      response.once('error', reject);
    });
    outgoing.once('error', reject);
    outgoing.end();
  });
}

function http2One(session: ClientHttp2Session, hop: HttpAction, signal: AbortSignal, closeAfter: boolean): Promise<HopAnswer> {
  const { host, ...headers } = probeHeaders(hop);
  let onSessionError: (error: Error) => void = () => undefined;
  return new Promise<HopAnswer>((resolve, reject) => {
    onSessionError = reject;
    // A kept session serves many probes: its listener goes when this GET is over.
    session.once('error', onSessionError);
    const stream = session.request({ ':method': 'GET', ':scheme': 'https', ':authority': host ?? authority(hop), ':path': hop.path, ...headers }, { signal });
    stream.once('response', (answer) => {
      stream.resume();
      stream.once('end', () => resolve({ status: Number(answer[':status'] ?? 500), location: answer.location as string | undefined }));
    });
    stream.once('error', reject);
    stream.end();
  }).finally(() => {
    session.off('error', onSessionError);
    if (closeAfter) session.destroy();
  });
}

/** A TLS connection offering h2 and HTTP/1.1, from the probe source; aborting destroys it. */
function tlsOpen(hop: HttpAction, localAddress: string, signal: AbortSignal): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const socket = tlsConnect({
      socket: netConnect({ host: hop.host, port: hop.port, localAddress }), ALPNProtocols: ['h2', 'http/1.1'], rejectUnauthorized: false,
      ...(isIP(hop.host) ? {} : { servername: hop.host }),
    });
    const onAbort = () => socket.destroy(signal.reason as Error);
    const onError = (error: Error) => {
      signal.removeEventListener('abort', onAbort);
      reject(error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('error', onError);
    socket.once('secureConnect', () => {
      signal.removeEventListener('abort', onAbort);
      socket.off('error', onError);
      resolve(socket);
    });
  });
}
