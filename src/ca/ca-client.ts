import { connect, type ClientHttp2Session } from 'node:http2';
import { frame, GrpcFrameReader } from '../xds/grpc-frame.ts';
import { statusFromHeaders, statusName } from '../xds/grpc-status.ts';
import { decodeCertificateResponse, encodeCertificateRequest, type CertificateRequest } from './ca-proto.ts';

const path = '/istio.v1.auth.IstioCertificateService/CreateCertificate';
/** A chain is a few KB; anything near this is not a certificate answer. */
const maxAnswerBytes = 1 << 20;

export interface CaEndpoint {
  /** host:port of the CA (istiod's 15012 by default). */
  address: string;
  /** TLS towards the CA; absent for a plaintext CA (tests, a local CA). */
  tls?: { roots: Buffer; serverName: string; cert?: Buffer; key?: Buffer };
  clusterId?: string;
}

export interface CaCall {
  endpoint: CaEndpoint;
  request: CertificateRequest;
  token: string | undefined;
  timeoutMs: number;
}

/** `code` is the gRPC status name, or what went wrong before one: CONNECT, TLS, PROTOCOL. */
export type CaResult = { ok: true; chain: string[] } | { ok: false; code: string; message: string };

/**
 * One CreateCertificate call on its own HTTP/2 connection: a call every
 * twelve hours does not justify a connection (or a gRPC runtime) kept open.
 */
export function createCertificate(call: CaCall): Promise<CaResult> {
  return new Promise((resolve) => {
    const session = openSession(call.endpoint);
    let settled = false;
    const finish = (result: CaResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ ok: false, code: 'DEADLINE_EXCEEDED', message: `no answer within ${call.timeoutMs} ms` }), call.timeoutMs);
    session.on('error', (error: NodeJS.ErrnoException) => finish({ ok: false, code: connectFailure(error), message: error.message }));
    sendCall(session, call, finish);
  });
}

function openSession(endpoint: CaEndpoint): ClientHttp2Session {
  if (!endpoint.tls) return connect(`http://${endpoint.address}`);
  const { roots, serverName, cert, key } = endpoint.tls;
  return connect(`https://${endpoint.address}`, { ca: roots, servername: serverName, cert, key, ALPNProtocols: ['h2'] });
}

function sendCall(session: ClientHttp2Session, call: CaCall, finish: (result: CaResult) => void): void {
  const stream = session.request(requestHeaders(call));
  const messages: Buffer[] = [];
  let parts: Buffer[] = [];
  const reader = new GrpcFrameReader({ begin: () => (parts = []), data: (bytes) => parts.push(bytes), end: () => messages.push(Buffer.concat(parts)) }, maxAnswerBytes);
  let status: { code: number; message: string } | undefined;
  stream.on('response', (headers) => (status = statusFromHeaders(headers) ?? status));
  stream.on('trailers', (headers) => (status = statusFromHeaders(headers) ?? status));
  stream.on('data', (chunk: Buffer) => {
    try {
      reader.push(chunk);
    } catch (error) {
      finish({ ok: false, code: 'PROTOCOL', message: (error as Error).message });
    }
  });
  let failure: NodeJS.ErrnoException | undefined;
  stream.on('error', (error) => (failure = error)); // a TLS failure surfaces here before the session's error
  stream.on('close', () => finish(failure && !status ? { ok: false, code: connectFailure(failure), message: failure.message } : verdict(status, messages)));
  stream.end(frame(encodeCertificateRequest(call.request)));
}

function requestHeaders(call: CaCall) {
  return {
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-timeout': `${call.timeoutMs}m`,
    ...(call.token ? { authorization: `Bearer ${call.token}` } : {}),
    ...(call.endpoint.clusterId ? { clusterid: call.endpoint.clusterId } : {}),
  };
}

function verdict(status: { code: number; message: string } | undefined, messages: Buffer[]): CaResult {
  if (!status) return { ok: false, code: 'PROTOCOL', message: 'the CA closed the call without a gRPC status' };
  if (status.code !== 0) return { ok: false, code: statusName(status.code), message: status.message };
  if (messages.length !== 1) return { ok: false, code: 'PROTOCOL', message: `expected one answer, got ${messages.length}` };
  try {
    return { ok: true, chain: decodeCertificateResponse(messages[0]!) };
  } catch (error) {
    return { ok: false, code: 'PROTOCOL', message: (error as Error).message };
  }
}

/** TLS failures (wrong root, wrong name) read differently in a log than a CA that is down. */
function connectFailure(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code.includes('SSL') || /certificate|altnames/i.test(error.message)) return 'TLS';
  return 'CONNECT';
}
