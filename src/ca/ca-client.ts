import type * as Grpc from '@grpc/grpc-js';
import { loadGrpc } from '../grpc/load.ts';
import { callUnary } from '../grpc/unary.ts';
import { decodeCertificateResponse, encodeCertificateRequest, type CertificateRequest } from './ca-proto.ts';

const path = '/istio.v1.auth.IstioCertificateService/CreateCertificate';
/** A chain is a few KB; anything near this is not a certificate answer. */
export const maxAnswerBytes = 1 << 20;

/** TLS towards the CA: the roots its certificate must chain to, the name it must carry, PROV_CERT's identity if any. */
export interface CaTls { roots: Buffer; serverName: string; cert?: Buffer; key?: Buffer }

export interface CaEndpoint {
  /** host:port of the CA (istiod's 15012 by default). */
  address: string;
  /** TLS towards the CA; absent for a plaintext CA (tests, a local CA). */
  tls?: CaTls;
  clusterId?: string;
  /** CA_HEADER_*: extra metadata on every call (lower-case names, checked at start). */
  headers?: Record<string, string>;
}

export interface CaCall {
  endpoint: CaEndpoint;
  request: CertificateRequest;
  token: string | undefined;
  timeoutMs: number;
  /** Where the call's TLS credentials come from (caCredentials()); one kept per process by default. */
  credentials?: CaCredentials;
  /** The channel kept between calls (caChannel()); without it the call has a channel of its own, closed when it ends. */
  channel?: CaChannel;
}

/** `code` is the gRPC status name, or what went wrong before one: CONNECT, TLS, PROTOCOL. */
export type CaResult = { ok: true; chain: string[] } | { ok: false; code: string; message: string };

/**
 * One CreateCertificate call through @grpc/grpc-js. grpc-js keeps the
 * deadline, the size limit on the answer and the TLS checks (the root, and
 * the name the server's certificate must carry: CA_ADDR's host, or
 * ISTIOD_SAN for a CA that is the discovery server; ca-settings.ts). The two
 * messages stay hand-encoded (ca-proto.ts). Never rejects: every failure is
 * a CaResult.
 */
export async function createCertificate(call: CaCall): Promise<CaResult> {
  const grpc = await loadGrpc();
  const credentials = (call.credentials ?? sharedCredentials)(grpc, call.endpoint);
  const channel = call.channel ?? oneCall;
  const client = channel.client(grpc, call.endpoint, credentials);
  const deadline = Date.now() + call.timeoutMs;
  let result: CaResult;
  try {
    const answer = await callUnary(client, { path, request: encodeCertificateRequest(call.request), metadata: metadataFor(grpc, call), deadline });
    result = { ok: true, chain: decodeCertificateResponse(answer) };
  } catch (error) {
    result = caFailure(grpc.status, error as Grpc.ServiceError | Error, { timeoutMs: call.timeoutMs, late: Date.now() >= deadline - deadlineSlackMs });
  }
  channel.done(client, result.ok);
  return result;
}

/** A call without a kept channel: a channel of its own, closed when it ends. */
const oneCall: CaChannel = {
  client: (grpc, endpoint, credentials) => newClient(grpc, endpoint, credentials),
  done: (client) => client.close(),
  close: () => undefined,
};

function newClient(grpc: typeof Grpc, endpoint: CaEndpoint, credentials: Grpc.ChannelCredentials, idleMs?: number): Grpc.Client {
  return new grpc.Client(endpoint.address, credentials, {
    'grpc.max_receive_message_length': maxAnswerBytes,
    ...(endpoint.tls ? { 'grpc.ssl_target_name_override': endpoint.tls.serverName, 'grpc.default_authority': endpoint.tls.serverName } : {}),
    ...(idleMs === undefined ? {} : { 'grpc.client_idle_timeout_ms': idleMs }),
  });
}

/** A kept channel closes its connection after this long without a call (grpc-js's client idle timeout); the next call connects again. */
export const caIdleMs = 60_000;

/** The CA's channel, kept from call to call (caChannel()). */
export interface CaChannel {
  /** The kept client when the address, the TLS name and the credentials are the same; else a new one, the old one closed. */
  client(grpc: typeof Grpc, endpoint: CaEndpoint, credentials: Grpc.ChannelCredentials): Grpc.Client;
  /**
   * A call on `client` ended. A failed one forgets and closes it, as
   * Istio's CA client reconnects after any error: the next call connects
   * afresh (new roots, a CA that moved) instead of waiting out grpc-js's
   * reconnect backoff. A client not kept (made after close()) is closed.
   */
  done(client: Grpc.Client, ok: boolean): void;
  /** Closes the kept client, and every later one after its call: the CA part stops. */
  close(): void;
}

/**
 * One channel to the CA kept between calls, as Istio's CA client keeps its
 * connection: a rotation then costs no TLS handshake, channel or HTTP/2
 * session of its own, whose native memory a rotation every few seconds
 * (short certificates) left in the main malloc arena (docs/benchmarks.md,
 * issue 44). Its connection closes after `idleMs` without a call (a
 * certificate every twelve hours keeps none open), and after a failed call.
 * One entry: another address, name or trust config replaces it.
 */
export function caChannel(idleMs = caIdleMs): CaChannel {
  let kept: { address: string; serverName: string | undefined; credentials: Grpc.ChannelCredentials; client: Grpc.Client } | undefined;
  let closed = false;
  const forget = () => {
    kept?.client.close();
    kept = undefined;
  };
  return {
    client(grpc, endpoint, credentials) {
      const serverName = endpoint.tls?.serverName;
      if (kept?.address === endpoint.address && kept.serverName === serverName && kept.credentials === credentials) return kept.client;
      forget();
      const client = newClient(grpc, endpoint, credentials, idleMs);
      if (!closed) kept = { address: endpoint.address, serverName, credentials, client };
      return client;
    },
    done(client, ok) {
      if (kept?.client !== client) client.close();
      else if (!ok) forget();
    },
    close() {
      closed = true;
      forget();
    },
  };
}

export type CaCredentials = (grpc: typeof Grpc, endpoint: CaEndpoint) => Grpc.ChannelCredentials;
export type MakeCaCredentials = (grpc: typeof Grpc, tls: CaTls) => Grpc.ChannelCredentials;

const makeSsl: MakeCaCredentials = (grpc, { roots, key, cert }) => grpc.credentials.createSsl(roots, key ?? null, cert ?? null);

/**
 * The CA's TLS credentials, made once per trust config (roots, and
 * PROV_CERT's cert and key) and kept while it stays the same: each one is
 * an OpenSSL context in native memory, and one per call (a rotation every
 * few seconds with short certificates) kept the main malloc arena growing
 * (docs/benchmarks.md, issue 44). One entry: a changed file replaces it.
 */
export function caCredentials(make: MakeCaCredentials = makeSsl): CaCredentials {
  let kept: { tls: CaTls; credentials: Grpc.ChannelCredentials } | undefined;
  let insecure: Grpc.ChannelCredentials | undefined;
  return (grpc, endpoint) => {
    const tls = endpoint.tls;
    // One object too: a kept channel (caChannel) is kept for the same credentials.
    if (!tls) return (insecure ??= grpc.credentials.createInsecure());
    if (!kept || !sameTrust(kept.tls, tls)) kept = { tls, credentials: make(grpc, tls) };
    return kept.credentials;
  };
}

const sameBytes = (a: Buffer | undefined, b: Buffer | undefined) => (a === undefined || b === undefined ? a === b : a.equals(b));
const sameTrust = (a: CaTls, b: CaTls) => sameBytes(a.roots, b.roots) && sameBytes(a.cert, b.cert) && sameBytes(a.key, b.key);

const sharedCredentials = caCredentials();

function metadataFor(grpc: typeof Grpc, call: CaCall): Grpc.Metadata {
  const metadata = new grpc.Metadata();
  // Names were lower-cased and checked when CA_HEADER_* was read (caHeadersFromEnv).
  for (const [name, value] of Object.entries(call.endpoint.headers ?? {})) metadata.set(name, value);
  if (call.token) metadata.set('authorization', `Bearer ${call.token}`);
  if (call.endpoint.clusterId) metadata.set('clusterid', call.endpoint.clusterId);
  return metadata;
}

/**
 * A CA that gives up at the deadline it was sent (grpc-timeout) may reset
 * the stream (CANCELLED) a moment before the client's own deadline timer
 * runs, on a busy event loop: within this much of the deadline, CANCELLED
 * is the deadline, and is logged as such.
 */
const deadlineSlackMs = 250;

/** What a failed call is, as one log line: `late` when it ended at (or just before) its deadline. */
export function caFailure(status: typeof Grpc.status, error: Grpc.ServiceError | Error, call: { timeoutMs: number; late: boolean }): CaResult {
  if (!('code' in error) || typeof error.code !== 'number') return { ok: false, code: 'PROTOCOL', message: error.message };
  const details = error.details || error.message;
  const { timeoutMs } = call;
  if (error.code === status.DEADLINE_EXCEEDED || (error.code === status.CANCELLED && call.late))
    return { ok: false, code: 'DEADLINE_EXCEEDED', message: `no answer within ${timeoutMs} ms (${details})` };
  if (error.code === status.RESOURCE_EXHAUSTED && /larger than max/i.test(details))
    return { ok: false, code: 'PROTOCOL', message: `the answer is over ${maxAnswerBytes} bytes (${details})` };
  // grpc-js reports a connection that never came up as UNAVAILABLE; a TLS
  // failure (wrong root, wrong name) reads differently in a log than a CA that is down.
  if (error.code === status.UNAVAILABLE && /No connection established|Failed to connect|ECONNREFUSED|ENOTFOUND|EAI_AGAIN/.test(details)) {
    return { ok: false, code: isTlsFailure(details) ? 'TLS' : 'CONNECT', message: details };
  }
  return { ok: false, code: status[error.code] ?? String(error.code), message: details };
}

function isTlsFailure(details: string): boolean {
  return /certificate|altnames|SSL|TLS|self.signed|unable to verify/i.test(details);
}
