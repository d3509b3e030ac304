import type * as Grpc from '@grpc/grpc-js';

export type GrpcModule = typeof Grpc;

let loading: Promise<GrpcModule> | undefined;

/**
 * @grpc/grpc-js, loaded on first use: a pod with neither SDS, a CA nor a
 * gRPC probe never pays for it (bench/cost.ts). grpc-js is CommonJS; in the
 * bundle its exports arrive as `default`, under Node as named exports too.
 */
export function loadGrpc(): Promise<GrpcModule> {
  loading ??= import('@grpc/grpc-js').then((module) => (module.default ?? module) as GrpcModule);
  return loading;
}
