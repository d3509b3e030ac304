import { connect } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { unaryCall } from './grpc-unary.ts';
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
export async function checkGrpcHealth(action: Extract<ProbeAction, { kind: 'grpc' }>, localAddress: string, signal: AbortSignal): Promise<boolean> {
  const authority = `http://${action.host.includes(':') ? `[${action.host}]` : action.host}:${action.port}`;
  const outcome = await unaryCall({ session: connect(authority, { createConnection: () => netConnect({ host: action.host, port: action.port, localAddress }) }), path: '/grpc.health.v1.Health/Check', request: encodeRequest(action.service), maxAnswerBytes: maxResponseBytes, signal });
  if (outcome.kind === 'failed') throw outcome.error;
  if (outcome.code !== 0) throw new Error(`grpc-status ${outcome.code}`);
  return outcome.answers.length === 1 && servingStatus(outcome.answers[0]!) === serving;
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
