import { FrameTooLarge, GrpcFrameReader } from '../../grpc/grpc-frame.ts';
import { GrpcStatus } from '../../grpc/grpc-status.ts';
import type { AdsStream } from './ads-stream.ts';
import type { Ending } from './ending.ts';

export interface RequestLegOptions {
  ads: AdsStream;
  /** Largest request from Envoy. */
  maxBytes: number;
  /** True once the stream is ending: later bytes are dropped. */
  ending(): boolean;
  /** One whole request; throws WireError when it does not parse. */
  request(message: Buffer): void;
  /** Ends the stream (both sides), with the first reason only. */
  end(ending: Ending): void;
  /** Envoy ended its side between requests. */
  finished(): void;
}

/**
 * Envoy's half of one relayed stream: its requests, each held whole (they
 * are small, and the first may need the node added). A malformed or
 * oversized one ends the stream.
 */
export function readRequests(options: RequestLegOptions): void {
  const { ads, end } = options;
  const requests = requestReader(options);
  ads.receive({
    data: (chunk) => {
      if (options.ending()) return;
      try {
        requests.push(chunk);
      } catch (error) {
        const status = error instanceof FrameTooLarge ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INVALID_ARGUMENT;
        end({ reason: 'bad_envoy_frame', status, details: `malformed request from Envoy: ${(error as Error).message}` });
      }
    },
    ended: () => {
      if (options.ending()) return;
      if (!requests.atBoundary)
        return end({ reason: 'bad_envoy_frame', status: GrpcStatus.INVALID_ARGUMENT, details: 'malformed request from Envoy: stream ended inside a message' });
      options.finished();
    },
  });
}

function requestReader({ maxBytes, request }: RequestLegOptions): GrpcFrameReader {
  let parts: Buffer[] = [];
  return new GrpcFrameReader({
    begin: () => (parts = []),
    data: (bytes) => parts.push(bytes),
    end: () => request(parts.length === 1 ? parts[0]! : Buffer.concat(parts)),
  }, maxBytes);
}
