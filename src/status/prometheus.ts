import type { IncomingMessage } from 'node:http';
import { http, https } from '../shared/node-http.ts';
import { timeoutSignal } from '../shared/clock.ts';

/** Envoy's part of /stats/prometheus is capped, so one scrape cannot grow without end (it streams through, never held whole). */
export const envoyMetricsCapBytes = 32 * 1024 * 1024;

/** What the merged page is made of: the text format (an app that speaks OpenMetrics too is asked for text, as Istio asks Envoy). */
const textAccept = 'text/plain;version=0.0.4,*/*;q=0.1';

export type CappedBody = { ok: true; status: number; text: string; truncated: boolean } | { ok: false; error: string };

/** A body being read: its status, and its bytes as they arrive (already aborted when the signal fires). */
export type StreamedBody = { ok: true; status: number; body: AsyncIterable<Buffer> | Iterable<Buffer> } | { ok: false; error: string };

/**
 * GETs a URL and hands its body over as it arrives, to be streamed on: the
 * caller reads it (or drops it: `signal` or the timeout aborts it, the
 * timeout counting until the last byte).
 */
export function openStream(url: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<StreamedBody> {
  const signal = withTimeout(options.timeoutMs, options.signal);
  const client = url.startsWith('https:') ? https : http;
  return new Promise((resolve) => {
    const req = client.get(url, { signal, agent: false, headers: { accept: textAccept } }, (response) =>
      resolve({ ok: true, status: response.statusCode ?? 0, body: response as AsyncIterable<Buffer> }),
    );
    req.on('error', (error) => resolve({ ok: false, error: signal.aborted ? String(signal.reason) : String(error) }));
  });
}

function withTimeout(ms: number, signal: AbortSignal | undefined): AbortSignal {
  const timeout = timeoutSignal(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

export interface FetchCappedOptions {
  capBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * GETs a URL (http or https) and keeps at most `capBytes` of the body, cut
 * after the last complete line so the text format stays valid. node:http,
 * not fetch: fetch loads undici into the agent (see shared/node-http.ts).
 */
export function fetchCapped(url: string, options: FetchCappedOptions): Promise<CappedBody> {
  const signal = withTimeout(options.timeoutMs, options.signal);
  const client = url.startsWith('https:') ? https : http;
  return new Promise((resolve) => {
    const fail = (error: Error) => resolve({ ok: false, error: signal.aborted ? String(signal.reason) : String(error) });
    const req = client.get(url, { signal, agent: false, headers: { accept: textAccept } }, (response) => {
      readCapped(response, options.capBytes).then(
        ({ bytes, truncated }) => resolve({ ok: true, status: response.statusCode ?? 0, text: bytes.toString('utf8'), truncated }),
        fail,
      );
    });
    req.on('error', fail);
  });
}

async function readCapped(body: IncomingMessage, capBytes: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size > capBytes) {
      body.destroy();
      const kept = Buffer.concat(chunks).subarray(0, capBytes);
      return { bytes: kept.subarray(0, kept.lastIndexOf(0x0a) + 1), truncated: true };
    }
  }
  return { bytes: Buffer.concat(chunks), truncated: false };
}
