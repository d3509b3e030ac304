import { loadGrpc } from '../../grpc/load.ts';
import { decodeVarint, encodeVarint } from '../../xds/wire.ts';
import type { ProbeAction } from './config.ts';

/** grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING */
const serving = 1;
/** A health answer is a few bytes; anything bigger is not one. */
const maxResponseBytes = 1024;
const checkPath = '/grpc.health.v1.Health/Check';

/**
 * One unary grpc.health.v1.Health/Check through @grpc/grpc-js (plaintext,
 * as the kubelet's gRPC probe), on a channel closed when the call ends.
 * Resolves true when the app answers SERVING; rejects with why otherwise.
 */
export async function checkGrpcHealth(action: Extract<ProbeAction, { kind: 'grpc' }>, signal: AbortSignal): Promise<boolean> {
  signal.throwIfAborted();
  const grpc = await loadGrpc();
  const target = `${action.host.includes(':') ? `[${action.host}]` : action.host}:${action.port}`;
  const client = new grpc.Client(target, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': maxResponseBytes });
  try {
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const call = client.makeUnaryRequest(checkPath, (request: Buffer) => request, (bytes: Buffer) => bytes, encodeRequest(action.service), (error, response) => (error ? reject(error) : resolve(response!)));
      // The probe's own timeout: the call ends with CANCELLED.
      signal.addEventListener('abort', () => call.cancel(), { once: true });
    });
    return servingStatus(answer) === serving;
  } finally {
    client.close();
  }
}

/** HealthCheckRequest { string service = 1; } */
export function encodeRequest(service: string): Buffer {
  if (service === '') return Buffer.alloc(0);
  const bytes = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), encodeVarint(bytes.length), bytes]);
}

/** HealthCheckResponse { ServingStatus status = 1; }; 0 (UNKNOWN) when absent. */
export function servingStatus(body: Buffer): number {
  // status is the only field; an empty message is UNKNOWN
  return body[0] === 0x08 ? (decodeVarint(body, 1)?.[0] ?? 0) : 0;
}
