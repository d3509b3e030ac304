import { loadGrpc } from '../../grpc/load.ts';
import { registerSourceAddressResolver, sourceBoundChannelOptions, sourceBoundTarget } from '../../grpc/source-address.ts';
import { decodeVarint, lenField } from '../../grpc/proto-wire.ts';
import { callUnary } from '../../grpc/unary.ts';
import type { ProbeAction } from './config.ts';

const path = '/grpc.health.v1.Health/Check';
/** grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING */
const serving = 1;
/** A health answer is a few bytes; anything bigger is not one. */
const maxResponseBytes = 1024;

export interface GrpcHealthCheck {
  action: Extract<ProbeAction, { kind: 'grpc' }>;
  /** The probe source (127.0.0.6 or ::6), so Istio's capture lets the probe reach the app directly. */
  localAddress: string;
  /** The probe's timeout, sent as the call's deadline. */
  timeoutMs: number;
  /** The kubelet's request going away cancels the call. */
  signal: AbortSignal;
}

/**
 * One grpc.health.v1.Health/Check through @grpc/grpc-js, plaintext as the
 * kubelet's gRPC probe, on a channel of its own closed afterwards: one probe,
 * one connection, as Istio's. Resolves true only for SERVING; a status other
 * than OK rejects with grpc-js' error. The two messages are one field each,
 * hand-encoded with grpc/proto-wire.ts rather than loading a .proto.
 */
export async function checkGrpcHealth(check: GrpcHealthCheck): Promise<boolean> {
  const grpc = await loadGrpc();
  registerSourceAddressResolver(grpc);
  const { action, localAddress } = check;
  const client = new grpc.Client(sourceBoundTarget({ host: action.host, port: action.port, localAddress }), grpc.credentials.createInsecure(), {
    ...sourceBoundChannelOptions,
    'grpc.max_receive_message_length': maxResponseBytes,
  });
  try {
    const answer = await callUnary(client, { path, request: encodeRequest(action.service), deadline: Date.now() + check.timeoutMs, signal: check.signal });
    return servingStatus(answer) === serving;
  } finally {
    client.close();
  }
}

/** HealthCheckRequest { string service = 1; } */
export function encodeRequest(service: string): Buffer {
  return service === '' ? Buffer.alloc(0) : lenField(1, service);
}

/** HealthCheckResponse { ServingStatus status = 1; }; 0 (UNKNOWN) when absent. */
export function servingStatus(body: Buffer): number {
  // status is the only field; an empty message is UNKNOWN
  return body[0] === 0x08 ? (decodeVarint(body, 1)?.[0] ?? 0) : 0;
}
