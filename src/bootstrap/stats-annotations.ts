import { parseDuration } from '../shared/duration.ts';
import { AgentError } from '../shared/errors.ts';
import { parseBoundedJson } from '../role/bounded-json.ts';

/**
 * The pod annotations that tune Envoy's stats, rendered as Istio's
 * bootstrap renders them (pkg/bootstrap/config.go): histogram buckets by
 * stat prefix, the flush interval and the eviction interval. Istio logs a
 * warning and drops a value it cannot use; here it is exit 2 naming the
 * annotation, as for the other stats annotations.
 */
export const statsAnnotationNames = {
  buckets: 'sidecar.istio.io/statsHistogramBuckets',
  flush: 'sidecar.istio.io/statsFlushInterval',
  eviction: 'sidecar.istio.io/statsEvictionInterval',
} as const;

export interface StatsAnnotationVariables {
  /** stats_config.histogram_bucket_settings, or null (no key). */
  histogram_bucket_settings: unknown[] | null;
  stats_flush_interval: string | null;
  stats_eviction_interval: string | null;
}

const bad = (name: string, reason: string) => new AgentError('BAD_ENV', `annotation ${name}: ${reason}`);
/** Envoy's own default flush interval, which Istio's eviction check also assumes. */
const defaultFlushMs = 5000;

export function statsAnnotationVariables(annotations: Readonly<Record<string, unknown>>): StatsAnnotationVariables {
  const text = (name: string) => (typeof annotations[name] === 'string' && annotations[name] !== '' ? (annotations[name] as string) : undefined);
  const flushText = text(statsAnnotationNames.flush);
  const flushMs = flushText === undefined ? undefined : flushInterval(flushText);
  const evictionText = text(statsAnnotationNames.eviction);
  const bucketsText = text(statsAnnotationNames.buckets);
  return {
    histogram_bucket_settings: bucketsText === undefined ? null : bucketSettings(bucketsText),
    stats_flush_interval: flushMs === undefined ? null : seconds(flushMs),
    stats_eviction_interval: evictionText === undefined ? null : evictionInterval(evictionText, flushMs ?? defaultFlushMs),
  };
}

/** `{"prefix": [buckets…]}`, sorted by prefix as Istio sorts them; Envoy wants at least one bucket, each above 0. */
function bucketSettings(text: string): unknown[] | null {
  const name = statsAnnotationNames.buckets;
  const parsed = parseBoundedJson(text);
  if (!parsed.ok) throw bad(name, parsed.reason);
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(name, 'must be a JSON object of stat prefix to bucket list');
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [prefix, buckets] of entries) {
    const fine = Array.isArray(buckets) && buckets.length > 0 && buckets.every((bucket) => typeof bucket === 'number' && bucket > 0 && Number.isFinite(bucket));
    if (!fine) throw bad(name, `"${prefix}": buckets must be a non-empty list of numbers above 0`);
  }
  return entries.length === 0 ? null : entries.map(([prefix, buckets]) => ({ match: { prefix }, buckets }));
}

/** Envoy takes 1ms up to (not including) 300s. */
function flushInterval(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw bad(statsAnnotationNames.flush, `"${text}" is not a duration (e.g. 10s)`);
  if (ms < 1 || ms >= 300_000) throw bad(statsAnnotationNames.flush, `${text} is outside Envoy's range (1ms to under 300s)`);
  return ms;
}

/** A multiple of the flush interval, in whole seconds as Istio renders it; 0 is unset. */
function evictionInterval(text: string, flushMs: number): string | null {
  const name = statsAnnotationNames.eviction;
  const ms = parseDuration(text);
  if (ms === undefined || ms < 0) throw bad(name, `"${text}" is not a duration (e.g. 60s)`);
  if (ms % flushMs !== 0) throw bad(name, `${text} is not a multiple of the stats flush interval (${seconds(flushMs)})`);
  const whole = Math.floor(ms / 1000);
  return whole === 0 ? null : `${whole}s`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(3).replace(/\.?0+$/, '')}s`;
