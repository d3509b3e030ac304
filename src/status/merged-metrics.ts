import { MetadataFilter } from './metadata-filter.ts';
import type { StreamedBody } from './prometheus.ts';

/** The parts of one scrape, each already under way. */
export interface MergedParts {
  /** The agent's own text (small: made whole by its registry). */
  agent: string;
  /** Envoy's answer, its body not yet read; undefined when Envoy's stats are not merged. */
  envoy?: StreamedBody;
  /** The app's part (capped, made whole), awaited once Envoy's has gone out. */
  app?: Promise<string>;
  /** Envoy's body is cut after this many bytes (at a line's end). */
  envoyCapBytes: number;
  /** Counts a failed Envoy part (not one the client dropped). */
  envoyFailed(): void;
  /** Aborted when the client is gone. */
  signal?: AbortSignal;
}

/**
 * The merged page, made as the client reads it: the agent's text, then
 * Envoy's body passed through as it arrives (a comment saying why when it
 * fails, or is cut at the cap), then the app's. Nothing is held whole but
 * the small parts: a page of any size costs the agent a chunk or two at a
 * time, and a client that stops reading stops Envoy's stream too.
 */
export async function* mergedMetrics(parts: MergedParts): AsyncGenerator<Buffer | string> {
  const filter = new MetadataFilter();
  yield filter.text(parts.agent);
  if (parts.envoy) yield* envoyPart(parts, parts.envoy, filter);
  if (parts.app) yield filter.text(await parts.app);
}

async function* envoyPart(parts: MergedParts, envoy: StreamedBody, filter: MetadataFilter): AsyncGenerator<Buffer | string> {
  if (!envoy.ok || envoy.status !== 200) {
    if (envoy.ok) destroy(envoy.body);
    parts.envoyFailed();
    return yield `# Envoy metrics unavailable: ${oneLine(envoy.ok ? `HTTP ${envoy.status}` : envoy.error)}\n`;
  }
  let size = 0;
  try {
    for await (const chunk of envoy.body) {
      size += chunk.byteLength;
      if (size <= parts.envoyCapBytes) {
        yield* filter.chunk(chunk);
        continue;
      }
      yield* filter.chunk(chunk.subarray(0, chunk.byteLength - (size - parts.envoyCapBytes)));
      filter.dropPartial();
      return yield '# Envoy metrics truncated at the size cap\n';
    }
    yield* filter.end();
  } catch (error) {
    filter.dropPartial();
    if (parts.signal?.aborted) throw error;
    parts.envoyFailed();
    yield `# Envoy metrics unavailable: ${oneLine(String(error))}\n`;
  }
}

function destroy(body: AsyncIterable<Buffer> | Iterable<Buffer>): void {
  (body as Partial<{ destroy(): void }>).destroy?.();
}

export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 300);
}
