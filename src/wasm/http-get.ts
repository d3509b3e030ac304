import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP, type BlockList, type LookupFunction } from 'node:net';
import { boundedTimer } from '../shared/clock.ts';
import { http, https } from '../shared/node-http.ts';
import { refusedAddress } from './ssrf.ts';

export interface HttpGetOptions {
  timeoutMs: number;
  /** Skip TLS verification (WASM_INSECURE_REGISTRIES). */
  insecure?: boolean;
  headers?: Record<string, string>;
  /** The body is cut off (an error) past this many bytes. */
  maxBytes: number;
  /** The operator's extra refused ranges (BLOCKED_CIDRS_IN_WASM_FETCH). */
  blocked?: BlockList;
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Where the answer came from, after redirects. */
  url: string;
}

export class FetchRefused extends Error {}

const maxRedirects = 5;

/**
 * Checks every address a name resolves to before the socket connects, so a
 * name (or a redirect) that leads to instance metadata is refused where it
 * would land, not where it starts.
 */
const guardedLookup = (blocked: BlockList | undefined): LookupFunction => (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const list = addresses as LookupAddress[];
    const refused = list.map((entry) => refusedAddress(entry.address, blocked)).find((reason) => reason !== undefined);
    if (refused) return callback(new FetchRefused(`${hostname}: ${refused}`), '', 0);
    if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, list);
    callback(null, list[0]!.address, list[0]!.family);
  });
};

/** One GET, following redirects; every hop's address is checked at connect time. */
export async function httpGet(url: string, options: HttpGetOptions): Promise<HttpAnswer> {
  let current = url;
  for (let hop = 0; hop <= maxRedirects; hop++) {
    const answer = await getOnce(current, options);
    const location = answer.headers.location;
    if (answer.status < 300 || answer.status >= 400 || answer.status === 304 || !location) return answer;
    const next = new URL(location, current);
    // A redirect carries no credentials to another host.
    if (next.host !== new URL(current).host && options.headers?.authorization) options = { ...options, headers: { ...options.headers, authorization: '' } };
    current = next.toString();
  }
  throw new Error(`${url}: more than ${maxRedirects} redirects`);
}

function getOnce(url: string, options: HttpGetOptions): Promise<HttpAnswer> {
  const target = new URL(url);
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.reject(new Error(`${url}: only http and https are fetched`));
  const host = target.hostname.replace(/^\[|\]$/g, '');
  // Node does not look up an IP literal: check it here.
  const refused = isIP(host) ? refusedAddress(host, options.blocked) : undefined;
  if (refused) return Promise.reject(new FetchRefused(refused));
  const request = target.protocol === 'https:' ? https.request : http.request;
  const headers = Object.fromEntries(Object.entries(options.headers ?? {}).filter(([, value]) => value));
  return new Promise((resolve, reject) => {
    const call = request(
      target,
      { method: 'GET', headers, lookup: guardedLookup(options.blocked), agent: false, rejectUnauthorized: !options.insecure, timeout: options.timeoutMs },
      (response) => {
        const parts: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= options.maxBytes) return parts.push(chunk);
          // Rejected here, not only through destroy: a body that arrived whole would still reach 'end', cut short.
          const tooLarge = new Error(`${url}: body larger than ${options.maxBytes} bytes`);
          reject(tooLarge);
          call.destroy(tooLarge);
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(parts), url }));
        response.on('error', reject);
      },
    );
    // agent: false above: a fresh connection per request, so every one passes the address check (fetches are rare).
    // The socket timeout only sees idleness; the whole request gets the same bound.
    const deadline = boundedTimer(() => call.destroy(new Error(`${url}: no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    call.on('close', () => deadline.cancel());
    call.on('timeout', () => call.destroy(new Error(`${url}: no answer within ${options.timeoutMs} ms`)));
    call.on('error', reject);
    call.end();
  });
}

/** A registry that answers TLS with plain HTTP: the handshake sees an HTTP status line. */
export function spokePlainHttp(error: unknown): boolean {
  const text = `${(error as NodeJS.ErrnoException)?.code ?? ''} ${(error as Error)?.message ?? ''}`;
  return /WRONG_VERSION_NUMBER|wrong version number|packet length too long|http request/i.test(text);
}
