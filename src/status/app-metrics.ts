import { Counter, type Registry } from 'prom-client';
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
 * Parses the injector's copy of the app's prometheus.io/{scrape,port,path}
 * (and an optional scheme), all strings as Istio writes them. Undefined when
 * unset or scrape is "false". Throws BAD_ENV naming the variable.
 */
export function parseAppMetricsTarget(value: string | undefined): AppMetricsTarget | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw badEnv(annotationsEnv, `not JSON (${(error as Error).message})`, error);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badEnv(annotationsEnv, 'must be a JSON object with scrape, port, path');
  const { scrape = 'true', port, path = '/metrics', scheme = 'http' } = parsed as Record<string, unknown>;
  if (scrape !== 'true' && scrape !== 'false') throw badEnv(annotationsEnv, `scrape ${JSON.stringify(scrape)} is not "true" or "false"`);
  if (scrape === 'false') return undefined;
  if (typeof port !== 'string' || !/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) throw badEnv(annotationsEnv, `port ${JSON.stringify(port)} is not a port number in 1-65535`);
  if (typeof path !== 'string' || !path.startsWith('/') || /[\s#]/.test(path)) throw badEnv(annotationsEnv, `path ${JSON.stringify(path)} must start with / and hold no spaces`);
  if (scheme !== 'http' && scheme !== 'https') throw badEnv(annotationsEnv, `scheme ${JSON.stringify(scheme)} is not http or https`);
  return { url: `${scheme}://127.0.0.1:${port}${path === '' ? '/metrics' : path}` };
}

/**
 * The app's metrics as a part of the merged scrape. Down, slow, failing or
 * oversized costs this part only: it becomes a comment line, and `failed`
 * lets the caller count it.
 */
export async function scrapeApp(target: AppMetricsTarget, fetch: typeof fetchCapped, signal?: AbortSignal): Promise<{ text: string; failed?: string }> {
  const body: CappedBody = await fetch(target.url, { capBytes: appMetricsCapBytes, timeoutMs: appMetricsTimeoutMs, signal });
  if (!body.ok) return unavailable(body.error);
  if (body.status !== 200) return unavailable(`HTTP ${body.status}`);
  return body.truncated ? { text: `${body.text}# app metrics truncated at the size cap\n`, failed: 'truncated' } : { text: body.text };
}

function unavailable(reason: string) {
  const line = reason.replace(/\s+/g, ' ').slice(0, 300);
  return { text: `# app metrics unavailable: ${line}\n`, failed: line };
}

/** The app's part as the status handler wants it: failures are counted and logged, never thrown. */
export function appMetricsPart(target: AppMetricsTarget, registry: Registry, logger: Logger): (signal?: AbortSignal) => Promise<string> {
  const failures = new Counter({ name: 'pilot_agent_app_metrics_scrape_failures_total', help: 'Scrapes of the app\'s metrics (ISTIO_PROMETHEUS_ANNOTATIONS) that failed, timed out or were truncated', registers: [registry] });
  return async (signal) => {
    const part = await scrapeApp(target, fetchCapped, signal);
    if (part.failed) {
      failures.inc();
      logger.warn({ url: target.url, reason: part.failed }, 'app metrics scrape failed');
    }
    return part.text;
  };
}
