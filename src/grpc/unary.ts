import type * as Grpc from '@grpc/grpc-js';

export interface UnaryCall {
  /** /package.Service/Method */
  path: string;
  /** The request message, already encoded. */
  request: Buffer;
  metadata?: Grpc.Metadata;
  /** Absolute, in ms since the epoch. */
  deadline: number;
  /** Aborting cancels the call (CANCELLED). */
  signal?: AbortSignal;
}

/**
 * One unary call on `client` with the messages passed through as bytes (the
 * agent encodes its few messages by hand). Resolves the answer's bytes;
 * rejects with grpc-js' error for any status other than OK.
 */
export function callUnary(client: Grpc.Client, call: UnaryCall): Promise<Buffer> {
  const { signal } = call;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const done = (error: Grpc.ServiceError | null, answer?: Buffer) => {
      signal?.removeEventListener('abort', cancel);
      return error ? reject(error) : resolve(answer!);
    };
    const [serialize, deserialize] = [(request: Buffer) => request, (bytes: Buffer) => bytes];
    const options = { deadline: call.deadline };
    const pending = call.metadata
      ? client.makeUnaryRequest(call.path, serialize, deserialize, call.request, call.metadata, options, done)
      : client.makeUnaryRequest(call.path, serialize, deserialize, call.request, options, done);
    const cancel = () => pending.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
  });
}
