import { connect, constants } from 'node:http2';
import { frame, prefixBytes } from '../../xds/grpc-frame.ts';
import { decodeVarint, encodeVarint } from '../../xds/wire.ts';
import type { ProbeAction } from './config.ts';

/** grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING */
const serving = 1;
/** A health answer is a few bytes; anything bigger is not one. */
const maxResponseBytes = 1024;

/**
 * One unary grpc.health.v1.Health/Check on node:http2 (plaintext, as the
 * kubelet's gRPC probe). Resolves true when the app answers SERVING.
 */
export function checkGrpcHealth(action: Extract<ProbeAction, { kind: 'grpc' }>, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const authority = `http://${action.host.includes(':') ? `[${action.host}]` : action.host}:${action.port}`;
    const session = connect(authority);
    const fail = (error: Error) => {
      session.destroy();
      reject(error);
    };
    const onAbort = () => fail(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    session.once('error', fail);
    session.once('close', () => signal.removeEventListener('abort', onAbort));
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: '/grpc.health.v1.Health/Check',
      [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let grpcStatus: string | undefined;
    stream.on('response', (headers) => (grpcStatus = headerValue(headers['grpc-status']) ?? grpcStatus));
    stream.on('trailers', (trailers) => (grpcStatus = headerValue(trailers['grpc-status']) ?? grpcStatus));
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxResponseBytes) return fail(new Error('health response too large'));
      chunks.push(chunk);
    });
    stream.once('error', fail);
    stream.once('end', () => {
      session.close();
      if (grpcStatus !== '0') return reject(new Error(`grpc-status ${grpcStatus ?? 'missing'}`));
      resolve(servingStatus(Buffer.concat(chunks)) === serving);
    });
    stream.end(frame(encodeRequest(action.service)));
  });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** HealthCheckRequest { string service = 1; } */
export function encodeRequest(service: string): Buffer {
  if (service === '') return Buffer.alloc(0);
  const bytes = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), encodeVarint(bytes.length), bytes]);
}

/** HealthCheckResponse { ServingStatus status = 1; } out of one gRPC message; 0 (UNKNOWN) when absent. */
export function servingStatus(message: Buffer): number {
  if (message.length < prefixBytes || message[0] !== 0) return 0;
  const body = message.subarray(prefixBytes, prefixBytes + message.readUInt32BE(1));
  // status is the only field; an empty message is UNKNOWN
  return body[0] === 0x08 ? (decodeVarint(body, 1)?.[0] ?? 0) : 0;
}
