/** Envoy's part of /stats/prometheus is capped so one scrape cannot eat the agent's memory. */
export const envoyMetricsCapBytes = 32 * 1024 * 1024;

export type CappedBody = { ok: true; status: number; text: string; truncated: boolean } | { ok: false; error: string };

export interface FetchCappedOptions {
  capBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * GETs a URL and keeps at most `capBytes` of the body, cut after the last
 * complete line so the text format stays valid.
 */
export async function fetchCapped(url: string, options: FetchCappedOptions): Promise<CappedBody> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await fetch(url, { signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout });
    const { bytes, truncated } = await readCapped(response.body, options.capBytes);
    return { ok: true, status: response.status, text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'), truncated };
  } catch (error) {
    return { ok: false, error: (error as Error).cause ? String((error as Error).cause) : String(error) };
  }
}

async function readCapped(body: ReadableStream<Uint8Array> | null, capBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!body) return { bytes: new Uint8Array(), truncated: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size > capBytes) {
      await body.cancel().catch(() => undefined);
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
