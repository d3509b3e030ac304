import type { IncomingMessage } from 'node:http';
import { http, https } from '../shared/node-http.ts';
import { timeoutSignal } from '../shared/clock.ts';

/** Envoy's part of /stats/prometheus is capped so one scrape cannot eat the agent's memory. */
export const envoyMetricsCapBytes = 32 * 1024 * 1024;

/** What the merged page is made of: the text format (an app that speaks OpenMetrics too is asked for text, as Istio asks Envoy). */
const textAccept = 'text/plain;version=0.0.4,*/*;q=0.1';

export type CappedBody = { ok: true; status: number; text: string; truncated: boolean } | { ok: false; error: string };

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
  const timeout = timeoutSignal(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
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

const metadataLine = /^# (HELP|TYPE) (\S+)[^\n]*(\n|$)/gm;

/**
 * The agent's metrics, then Envoy's. A family's HELP and TYPE may appear
 * once only, so Envoy's repeats (of its own or of ours) are dropped.
 */
export function mergePrometheus(agentText: string, envoyText: string): string {
  const seen = new Set<string>();
  for (const match of agentText.matchAll(metadataLine)) seen.add(`${match[1]} ${match[2]}`);
  const envoy = envoyText.replace(metadataLine, (line, kind: string, name: string) => {
    const key = `${kind} ${name}`;
    if (seen.has(key)) return '';
    seen.add(key);
    return line;
  });
  return joinParts(agentText, envoy);
}

function joinParts(...parts: string[]): string {
  return parts.filter(Boolean).map((part) => (part.endsWith('\n') ? part : `${part}\n`)).join('');
}
