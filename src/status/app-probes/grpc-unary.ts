import type { ClientHttp2Session, OutgoingHttpHeaders } from 'node:http2';
import { frame, GrpcFrameReader } from '../../xds/grpc-frame.ts';
import { statusFromHeaders } from '../../xds/grpc-status.ts';

export interface UnaryCallOptions {
  /** Opened by the caller (plaintext or TLS); destroyed when the call settles: one call, one connection. */
  session: ClientHttp2Session;
  path: string;
  /** Beyond gRPC's own: authorization, grpc-timeout, … */
  headers?: OutgoingHttpHeaders;
  /** The request message, unframed. */
  request: Buffer;
  /** A larger answer ends the call as a protocol failure. */
  maxAnswerBytes: number;
  /** Aborting ends the call as `aborted`. */
  signal: AbortSignal;
}

/** How a call ended: the server's status and answers, or why there was no status. */
export type UnaryOutcome =
  | { kind: 'status'; code: number; message: string; answers: Buffer[] }
  | { kind: 'failed'; stage: 'connect' | 'protocol' | 'aborted'; error: Error };

/**
 * One unary gRPC call on node:http2, for the gRPC health probe only. Every
 * other gRPC call goes through @grpc/grpc-js; this one cannot: Istio's app
 * probes come from 127.0.0.6 (the source its capture lets reach the app
 * without Envoy), and grpc-js 1.14 has no way to choose a call's local
 * address (its transport calls net.connect with the target only), while a
 * session here takes any socket. Never rejects: failures are outcomes.
 */
export function unaryCall(options: UnaryCallOptions): Promise<UnaryOutcome> {
  const { session, signal } = options;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: UnaryOutcome) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      session.destroy();
      resolve(outcome);
    };
    const onAbort = () => finish({ kind: 'failed', stage: 'aborted', error: new Error('aborted') });
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) return onAbort();
    session.on('error', (error: Error) => finish({ kind: 'failed', stage: 'connect', error }));
    sendRequest(options, finish);
  });
}

function sendRequest(options: UnaryCallOptions, finish: (outcome: UnaryOutcome) => void): void {
  const stream = options.session.request({ ':method': 'POST', ':path': options.path, 'content-type': 'application/grpc', te: 'trailers', ...options.headers });
  const answers: Buffer[] = [];
  let parts: Buffer[] = [];
  const reader = new GrpcFrameReader({ begin: () => (parts = []), data: (bytes) => parts.push(bytes), end: () => answers.push(Buffer.concat(parts)) }, options.maxAnswerBytes);
  let status: { code: number; message: string } | undefined;
  stream.on('response', (headers) => (status = statusFromHeaders(headers) ?? status));
  stream.on('trailers', (headers) => (status = statusFromHeaders(headers) ?? status));
  stream.on('data', (chunk: Buffer) => {
    try {
      reader.push(chunk);
    } catch (error) {
      finish({ kind: 'failed', stage: 'protocol', error: error as Error });
    }
  });
  let failure: Error | undefined;
  stream.on('error', (error) => (failure = error)); // a TLS failure surfaces here before the session's error
  stream.on('close', () => {
    if (status) return finish({ kind: 'status', ...status, answers });
    finish(failure ? { kind: 'failed', stage: 'connect', error: failure } : { kind: 'failed', stage: 'protocol', error: new Error('the call ended without a gRPC status') });
  });
  stream.end(frame(options.request));
}
