/**
 * istiod's one port, 15012, for tests: TLS with istiod's certificate, and
 * each gRPC call passed on by its service to the peer that plays that part
 * of istiod (the CA's IstioCertificateService to the ca-server, xDS to the
 * xds-server), request metadata and trailers as they came. The peers still
 * check the token themselves.
 */
import { connect, constants, createSecureServer, type ClientHttp2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';

export interface FrontRoute {
  /** Calls whose :path starts with this go to `url`. */
  pathPrefix: string;
  /** The peer, https:// (checked against `ca` for `servername`) or http://. */
  url: string;
}

export interface IstiodFront {
  address: string;
  close(): Promise<void>;
}

export interface IstiodFrontOptions {
  host: string;
  port: number;
  /** Files: istiod's certificate and key. */
  tls: { cert: string; key: string };
  /** The root the peers' certificates chain to, and the name they carry. */
  peerCa: string;
  peerName: string;
  routes: FrontRoute[];
  /** Where every other call goes. */
  fallback: string;
}

export async function startIstiodFront(options: IstiodFrontOptions): Promise<IstiodFront> {
  const server = createSecureServer({ cert: await readFile(options.tls.cert), key: await readFile(options.tls.key), ALPNProtocols: ['h2'] });
  const sessions = new Map<string, ClientHttp2Session>();
  const sessionFor = (url: string) => {
    const open = sessions.get(url);
    if (open && !open.closed && !open.destroyed) return open;
    const session = connect(url, { ca: options.peerCa, servername: options.peerName });
    session.on('error', () => undefined);
    sessions.set(url, session);
    return session;
  };
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    const url = options.routes.find((route) => path.startsWith(route.pathPrefix))?.url ?? options.fallback;
    pass(stream, headers, sessionFor(url));
  });
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(options.port, options.host, resolve));
  const { address, port } = server.address() as AddressInfo;
  return {
    address: `${address}:${port}`,
    close: async () => {
      for (const session of sessions.values()) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One call, both ways: headers, data with back-pressure (pipe), trailers, resets. */
function pass(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, session: ClientHttp2Session): void {
  const { ':authority': _authority, ':scheme': _scheme, ...request } = headers;
  const upstream = session.request(request);
  let trailers: IncomingHttpHeaders = {};
  upstream.on('response', (response) => {
    if (!stream.destroyed) stream.respond(response, { waitForTrailers: true });
  });
  upstream.on('trailers', (received) => (trailers = received));
  stream.on('wantTrailers', () => stream.sendTrailers(trailers));
  stream.pipe(upstream);
  upstream.pipe(stream);
  const reset = () => {
    if (!upstream.destroyed) upstream.close(constants.NGHTTP2_CANCEL);
    if (!stream.destroyed) stream.close(constants.NGHTTP2_CANCEL);
  };
  upstream.on('error', reset);
  stream.on('error', reset);
  stream.on('close', reset);
}
