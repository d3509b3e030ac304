import type { ServerHttp2Stream } from 'node:http2';
import { frame, GrpcFrameReader } from '../xds/grpc-frame.ts';
import { encodeGrpcMessage, type GrpcStatusCode } from '../xds/grpc-status.ts';

/**
 * The server side of a gRPC call on a node:http2 stream: headers, whole
 * messages in, framed messages out, a status at the end. The framing and
 * status codes are the relay's (src/xds/), shared rather than copied.
 */
export const grpcResponseHeaders = { ':status': 200, 'content-type': 'application/grpc' } as const;

/** Ends a call that never started with a status alone (a Trailers-Only response). */
export function rejectCall(stream: ServerHttp2Stream, code: GrpcStatusCode, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ...grpcResponseHeaders, 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message) }, { endStream: true });
}

/** Ends a started call with trailers carrying the status. */
export function endCall(stream: ServerHttp2Stream, code: GrpcStatusCode, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.headersSent) return rejectCall(stream, code, message);
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message) }));
  stream.end();
}

/** Writes one message; false when the stream is gone. */
export function sendMessage(stream: ServerHttp2Stream, message: Buffer): boolean {
  if (stream.destroyed || stream.closed) return false;
  if (!stream.headersSent) stream.respond(grpcResponseHeaders, { waitForTrailers: true });
  stream.write(frame(message));
  return true;
}

export interface MessageHandlers {
  message(bytes: Buffer): void;
  /** Malformed framing, or a message over `maxLength`. */
  error(error: Error): void;
  /** The client half-closed between messages (`clean`) or inside one. */
  end(clean: boolean): void;
}

/** Hands each whole request message to `handlers`; requests are small, so they are collected. */
export function readMessages(stream: ServerHttp2Stream, maxLength: number, handlers: MessageHandlers): void {
  let parts: Buffer[] = [];
  const reader = new GrpcFrameReader({
    begin: () => (parts = []),
    data: (bytes) => parts.push(bytes),
    end: () => handlers.message(Buffer.concat(parts)),
  }, maxLength);
  let failed = false;
  stream.on('data', (chunk: Buffer) => {
    if (failed) return;
    try {
      reader.push(chunk);
    } catch (error) {
      failed = true;
      handlers.error(error as Error);
    }
  });
  stream.on('end', () => !failed && handlers.end(reader.atBoundary));
}
