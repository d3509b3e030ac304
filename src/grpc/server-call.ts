import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { encodeGrpcMessage, GrpcStatus } from './grpc-status.ts';

/**
 * The server side of gRPC calls served on node:http2 by hand (the xDS
 * relay's): which method a call is for, and the headers and trailers of
 * its response. Written here once, so every call is answered the way a
 * gRPC server would answer it.
 */

/** The content type of every gRPC request and response (the relay's upstream leg sends it too). */
export const grpcContentType = 'application/grpc';

/** Headers of a response that carries messages; the status follows in trailers. */
const responseHeaders = { ':status': 200, 'content-type': grpcContentType } as const;

/** The status of a call, as trailers (or as the headers of a Trailers-Only response). */
function statusTrailers(code: number, message: string): OutgoingHttpHeaders {
  return { 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message) };
}

/**
 * One call's response. Headers go out once the call has something to send;
 * the status goes last: in trailers after the messages, or alone in the
 * headers (Trailers-Only) when nothing was sent. A stream ended without
 * a status gets OK.
 */
export class GrpcServerCall {
  readonly stream: ServerHttp2Stream;
  #trailers: OutgoingHttpHeaders | undefined;

  constructor(stream: ServerHttp2Stream) {
    this.stream = stream;
    stream.on('wantTrailers', () => stream.sendTrailers(this.#trailers ?? { 'grpc-status': String(GrpcStatus.OK) }));
  }

  /** Sends the response headers; messages may follow. Nothing when the stream is gone. */
  respond(): void {
    const { stream } = this;
    if (!stream.closed && !stream.destroyed) stream.respond(responseHeaders, { waitForTrailers: true });
  }

  /** Ends the call with `code` after whatever it has been sent already. */
  finish(code: number, message: string): void {
    const { stream } = this;
    if (stream.closed || stream.destroyed) return;
    const trailers = statusTrailers(code, message);
    if (!stream.headersSent) return void stream.respond({ ...responseHeaders, ...trailers }, { endStream: true });
    this.#trailers = trailers;
    stream.end();
  }
}

/**
 * Hands a stream to the handler of its method. A request that is not a
 * gRPC call gets HTTP 415; a method not served gets UNIMPLEMENTED.
 */
export function routeGrpcCall(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  methods: ReadonlyMap<string, (stream: ServerHttp2Stream) => void>,
): void {
  const path = headers[':path'] ?? '';
  if (headers[':method'] !== 'POST' || !headers['content-type']?.startsWith(grpcContentType)) {
    return void stream.respond({ ':status': 415 }, { endStream: true });
  }
  const serve = methods.get(path);
  if (!serve) return new GrpcServerCall(stream).finish(GrpcStatus.UNIMPLEMENTED, `unknown method ${path}`);
  serve(stream);
}
