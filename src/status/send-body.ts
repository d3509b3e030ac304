import type { ServerResponse } from 'node:http';
import { Readable, pipeline, type Transform } from 'node:stream';

type Chunks = AsyncIterable<Buffer | string>;

const pipelineCloseListeners = 8;

/** A streamed body's first `bytes` (all of it when shorter: no `rest` then), read to choose how to send it. */
export async function leading(body: Chunks, bytes: number): Promise<{ head: Buffer[]; rest?: AsyncIterator<Buffer | string> }> {
  const iterator = body[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  for (let size = 0; size < bytes; ) {
    const next = await iterator.next();
    if (next.done) return { head };
    const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
    head.push(chunk);
    size += chunk.byteLength;
  }
  return { head, rest: iterator };
}

/**
 * Streams the head and the rest of a body to the client, through `encoder`
 * (gzip) when given, as fast as the client reads and no faster: pipeline's
 * back-pressure stops pulling from the body (and so from Envoy) while the
 * client's socket is full, so a client that never reads holds a few chunks,
 * never the page. Any failure, or the client leaving, destroys all of it.
 */
export function streamTo(response: ServerResponse, head: Buffer[], rest: AsyncIterator<Buffer | string>, encoder?: Transform): void {
  const source = Readable.from(resume(head, rest), { objectMode: false });
  const done = () => undefined;
  // pipeline adds 7 'close' listeners to the response, beside the status server's own 4: without room for them
  // Node warns of a listener leak on every gzip scrape.
  response.setMaxListeners(response.getMaxListeners() + pipelineCloseListeners);
  if (encoder) pipeline(source, encoder, response, done);
  else pipeline(source, response, done);
}

async function* resume(head: Buffer[], rest: AsyncIterator<Buffer | string>): AsyncGenerator<Buffer | string> {
  yield* head.splice(0);
  // Through for-await, so that a stream torn down early ends the body's iterator too (and its Envoy request).
  yield* { [Symbol.asyncIterator]: () => rest };
}
