import { badEnv } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import { fetchCapped, type CappedBody } from './prometheus.ts';

export const annotationsEnv = 'ISTIO_PROMETHEUS_ANNOTATIONS';

/** The app's part is capped tighter than Envoy's: it shares the scrape with both. */
export const appMetricsCapBytes = 8 * 1024 * 1024;
/** Short enough that a slow app never makes Prometheus drop the whole scrape (default scrape timeout 10 s). */
export const appMetricsTimeoutMs = 3000;

/** Where the app's own metrics are, from its original prometheus.io annotations. */
export interface AppMetricsTarget {
  url: string;
}

/**
 * Ports the app's metrics may not point at: scraping them would recurse into
 * this very endpoint or read the data plane rather than the app (Istio refuses
 * the same ones).
 */
const reservedPorts: Record<number, string> = {
  15000: 'Envoy admin', 15001: 'outbound capture', 15004: 'pilot debug', 15006: 'inbound capture', 15008: 'HBONE tunnel',
  15020: 'the agent\'s status port', 15021: 'Envoy health', 15053: 'DNS proxy', 15090: 'Envoy\'s own Prometheus, already merged',
};

/**
 * Parses the injector's copy of the app's prometheus.io/{scrape,port,path}
 * (and an optional scheme), all strings as Istio writes them; the injector
 * writes "" for an annotation the pod lacks. As Istio's agent: scrape unless
 * scrape is "false", port "" is 80, path "" is /metrics; `targets` (Istio's
 * prometheus.istio.io/scrape-targets: [{port, path}, …]) replaces port and
 * path with several endpoints, each scraped. Empty when unset or off. Throws
 * BAD_ENV naming the variable, also for the status port or a port Istio
 * reserves (a scrape of those would recurse or read the proxy).
 */
export function parseAppMetricsTargets(value: string | undefined, statusPort = 15020): AppMetricsTarget[] {
  if (value === undefined || value.trim() === '') return [];
  const fields = parseObject(value);
  const { scrape = '', port = '', path = '', scheme = 'http', targets } = fields;
  if (typeof scrape !== 'string') throw badEnv(annotationsEnv, `scrape ${JSON.stringify(scrape)} is not a string`);
  if (scrape === 'false') return [];
  if (scheme !== 'http' && scheme !== 'https') throw badEnv(annotationsEnv, `scheme ${JSON.stringify(scheme)} is not http or https`);
  const endpoints = targets === undefined || targets === null ? [{ port, path }] : targetList(targets);
  return endpoints.map((endpoint) => ({ url: `${scheme}://127.0.0.1:${appPort(endpoint.port, statusPort)}${appPath(endpoint.path)}` }));
}

function targetList(targets: unknown): { port: unknown; path: unknown }[] {
  if (!Array.isArray(targets) || targets.length === 0) throw badEnv(annotationsEnv, 'targets must be a non-empty list of {port, path}');
  return targets.map((target: unknown) => {
    if (typeof target !== 'object' || target === null || Array.isArray(target))
      throw badEnv(annotationsEnv, `target ${JSON.stringify(target)} is not a {port, path} object`);
    const { port, path = '' } = target as Record<string, unknown>;
    // An empty port would silently be 80 here; Istio refuses it in a target.
    if (port === '' || port === undefined) throw badEnv(annotationsEnv, `target ${JSON.stringify(target)} has no port`);
    return { port, path };
  });
}

function appPath(path: unknown): string {
  const absolute = path === '' ? '/metrics' : path;
  if (typeof absolute !== 'string' || !absolute.startsWith('/') || /[\s#]/.test(absolute))
    throw badEnv(annotationsEnv, `path ${JSON.stringify(path)} must start with / and hold no spaces`);
  return absolute;
}

function parseObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw badEnv(annotationsEnv, `not JSON (${(error as Error).message})`, error);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badEnv(annotationsEnv, 'must be a JSON object with scrape, port, path');
  return parsed as Record<string, unknown>;
}

/** The app's port: "" is 80 as in Istio; never the status port or one Istio reserves. */
function appPort(port: unknown, statusPort: number): number {
  if (port === '') return 80;
  if (typeof port !== 'string' || !/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    throw badEnv(annotationsEnv, `port ${JSON.stringify(port)} is not a port number in 1-65535`);
  const number = Number(port);
  if (number === statusPort) throw badEnv(annotationsEnv, `port ${number} is the agent's status port: the scrape would recurse`);
  const reserved = reservedPorts[number];
  if (reserved) throw badEnv(annotationsEnv, `port ${number} is reserved for Istio (${reserved}), not the app's`);
  return number;
}

/**
 * The app's metrics as a part of the merged scrape. Down, slow, failing or
 * oversized costs this part only: it becomes a comment line, and `failed`
 * lets the caller count it. An OpenMetrics `# EOF` is dropped: more may follow.
 */
export async function scrapeApp(target: AppMetricsTarget, fetch: typeof fetchCapped, signal?: AbortSignal): Promise<{ text: string; failed?: string }> {
  const options = { capBytes: appMetricsCapBytes, timeoutMs: appMetricsTimeoutMs, signal };
  let body: CappedBody = await fetch(target.url, options);
  // Istio dials `localhost`, both loopbacks: an app listening on ::1 only (an IPv6 pod's) answers there. Refused sent nothing: safe to retry.
  if (!body.ok && /ECONNREFUSED/.test(body.error)) body = await fetch(target.url.replace('://127.0.0.1:', '://[::1]:'), options);
  if (!body.ok) return unavailable(body.error);
  if (body.status !== 200) return unavailable(`HTTP ${body.status}`);
  const text = body.text.replace(/(^|\n)# EOF\s*$/, '$1');
  return body.truncated ? { text: `${text}# app metrics truncated at the size cap\n`, failed: 'truncated' } : { text };
}

function unavailable(reason: string) {
  const line = reason.replace(/\s+/g, ' ').slice(0, 300);
  return { text: `# app metrics unavailable: ${line}\n`, failed: line };
}

/**
 * The app's part as the status handler wants it: every target at once, in
 * their order; each failure is counted (Istio's scrape_failures_total
 * {type="application"}) and logged, never thrown.
 */
export function appMetricsPart(targets: readonly AppMetricsTarget[], onFailure: () => void, logger: Logger): (signal?: AbortSignal) => Promise<string> {
  return async (signal) => {
    const parts = await Promise.all(targets.map(async (target) => {
      const part = await scrapeApp(target, fetchCapped, signal);
      if (part.failed) {
        onFailure();
        logger.warn({ url: target.url, reason: part.failed }, 'app metrics scrape failed');
      }
      return part.text.endsWith('\n') || part.text === '' ? part.text : `${part.text}\n`;
    }));
    return parts.join('');
  };
}
