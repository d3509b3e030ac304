import { createHash } from 'node:crypto';
import type { BlockList } from 'node:net';
import type { RandomSource } from '../shared/backoff.ts';
import type { Clock } from '../shared/clock.ts';
import { httpGet, type HttpAnswer, type HttpGetOptions } from './http-get.ts';
import type { Fetched, ModuleRequest } from './module-cache.ts';
import { prepareOci } from './oci-fetch.ts';
import { withRetries } from './retry.ts';
import { unbox } from './unbox.ts';

export interface FetcherOptions {
  /** Each request (WASM_HTTP_REQUEST_TIMEOUT). */
  requestTimeoutMs: number;
  /** Attempts per request (WASM_HTTP_REQUEST_MAX_RETRIES). */
  maxRetries: number;
  /** Hosts whose TLS is not verified (WASM_INSECURE_REGISTRIES; `*` for all). */
  insecureRegistries: ReadonlySet<string>;
  clock: Clock;
  random?: RandomSource;
  maxBytes: number;
  /** BLOCKED_CIDRS_IN_WASM_FETCH, refused besides link-local and metadata addresses. */
  blocked?: BlockList;
  /** Tests replace the network or the realm rule; production uses http-get.ts and ssrf.ts. */
  get?: (url: string, options: HttpGetOptions) => Promise<HttpAnswer>;
  refusedRealm?: (realm: string) => string | undefined;
}

const insecureFor = (registries: ReadonlySet<string>, url: string) => registries.has('*') || registries.has(new URL(url.replace(/^oci:/, 'https:')).host);

/** Fetches modules over http(s) and oci://, each request retried with backoff within the plugin's deadline. */
export function moduleFetcher(options: FetcherOptions): (request: ModuleRequest) => Promise<Fetched> {
  const get = options.get ?? httpGet;
  return async (request) => {
    const deadline = options.clock.now() + request.timeoutMs;
    const insecure = insecureFor(options.insecureRegistries, request.url);
    const retried = (url: string, extra: Omit<HttpGetOptions, 'timeoutMs' | 'maxBytes'>) =>
      withRetries(
        () =>
          get(url, {
            ...extra,
            blocked: options.blocked,
            timeoutMs: Math.max(1, Math.min(options.requestTimeoutMs, deadline - options.clock.now())),
            maxBytes: options.maxBytes,
          }),
        { attempts: options.maxRetries, clock: options.clock, random: options.random, deadline },
      );
    const scheme = request.url.slice(0, request.url.indexOf(':'));
    if (scheme === 'oci') {
      const image = await prepareOci(request.url, { pullSecret: request.pullSecret, insecure, get: retried, refusedRealm: options.refusedRealm });
      return { digest: image.manifestDigest, module: image.module };
    }
    if (scheme !== 'http' && scheme !== 'https') throw new Error(`unsupported Wasm module URL scheme ${JSON.stringify(scheme)}`);
    const answer = await retried(request.url, { insecure });
    if (answer.status !== 200) throw new Error(`${request.url}: HTTP ${answer.status}`);
    // As Istio: the checksum is of the module itself, once unwrapped from gzip or tar.
    const module = await unbox(answer.body, options.maxBytes);
    return { digest: createHash('sha256').update(module).digest('hex'), module: async () => module };
  };
}
