import { connect, type ClientHttp2Session } from 'node:http2';
import { unaryCall, type UnaryOutcome } from '../grpc/unary-call.ts';
import { statusName } from '../xds/grpc-status.ts';
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
  /** CA_HEADER_*: extra metadata on every call (lower-case names, checked at start). */
  headers?: Record<string, string>;
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
export async function createCertificate(call: CaCall): Promise<CaResult> {
  const outcome = await unaryCall({
    session: openSession(call.endpoint),
    path,
    headers: callHeaders(call),
    request: encodeCertificateRequest(call.request),
    maxAnswerBytes,
    signal: AbortSignal.timeout(call.timeoutMs),
  });
  return verdict(outcome, call.timeoutMs);
}

function openSession(endpoint: CaEndpoint): ClientHttp2Session {
  if (!endpoint.tls) return connect(`http://${endpoint.address}`);
  const { roots, serverName, cert, key } = endpoint.tls;
  return connect(`https://${endpoint.address}`, { ca: roots, servername: serverName, cert, key, ALPNProtocols: ['h2'] });
}

function callHeaders(call: CaCall) {
  return {
    ...call.endpoint.headers,
    'grpc-timeout': `${call.timeoutMs}m`,
    ...(call.token ? { authorization: `Bearer ${call.token}` } : {}),
    ...(call.endpoint.clusterId ? { clusterid: call.endpoint.clusterId } : {}),
  };
}

function verdict(outcome: UnaryOutcome, timeoutMs: number): CaResult {
  if (outcome.kind === 'failed') {
    if (outcome.stage === 'aborted') return { ok: false, code: 'DEADLINE_EXCEEDED', message: `no answer within ${timeoutMs} ms` };
    return { ok: false, code: outcome.stage === 'protocol' ? 'PROTOCOL' : connectFailure(outcome.error), message: outcome.error.message };
  }
  if (outcome.code !== 0) return { ok: false, code: statusName(outcome.code), message: outcome.message };
  if (outcome.answers.length !== 1) return { ok: false, code: 'PROTOCOL', message: `expected one answer, got ${outcome.answers.length}` };
  try {
    return { ok: true, chain: decodeCertificateResponse(outcome.answers[0]!) };
  } catch (error) {
    return { ok: false, code: 'PROTOCOL', message: (error as Error).message };
  }
}

/** TLS failures (wrong root, wrong name) read differently in a log than a CA that is down. */
function connectFailure(error: Error & { code?: string }): string {
  const code = error.code ?? '';
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code.includes('SSL') || /certificate|altnames/i.test(error.message)) return 'TLS';
  return 'CONNECT';
}
