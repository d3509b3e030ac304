import type { ServerHttp2Stream } from 'node:http2';

/** One socket read brings several DATA frames; they leave in one write, not one each. */
export function corkUntilNextTick(stream: ServerHttp2Stream): void {
  if (stream.writableCorked) return;
  stream.cork();
  process.nextTick(() => stream.uncork());
}

/** Stops reading `from` until `to` has flushed what it holds. */
export function pauseUntilDrained(from: NodeJS.ReadableStream, to: NodeJS.EventEmitter): void {
  from.pause();
  to.once('drain', () => from.resume());
}
