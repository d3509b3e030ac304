// Content negotiation of the status port: OpenMetrics for /stats/prometheus
// when the scraper prefers it, gzip for any answer when the client takes it.

/** The media types of an Accept or Accept-Encoding header with their q values, best first (ties keep their order). */
export function preferences(header: string | undefined): { value: string; q: number }[] {
  if (!header) return [];
  const entries = header.split(',').slice(0, 64).map((part, index) => {
    const [value = '', ...params] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = params.map((param) => /^q=([0-9.]+)$/.exec(param)?.[1]).find((found) => found !== undefined);
    return { value, q: q === undefined ? 1 : Math.min(1, Number(q) || 0), index };
  });
  return entries.filter((entry) => entry.value && entry.q > 0).sort((a, b) => b.q - a.q || a.index - b.index).map(({ value, q }) => ({ value, q }));
}

/**
 * True when the scraper ranks OpenMetrics above the text format, as
 * Prometheus's default Accept does (`application/openmetrics-text;version=1.0.0;q=0.5,…,text/plain;version=0.0.4;q=0.4,*∕*;q=0.1`).
 */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  const best = preferences(accept).find((entry) => entry.value === 'application/openmetrics-text' || entry.value.startsWith('text/') || entry.value === '*/*');
  return best?.value === 'application/openmetrics-text';
}

/** True when the client takes gzip (`gzip` or `*` with q > 0; an explicit `gzip;q=0` refuses it). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  const all = (acceptEncoding ?? '').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  if (all.includes('gzip')) return preferences(acceptEncoding).some((entry) => entry.value === 'gzip');
  return preferences(acceptEncoding).some((entry) => entry.value === '*');
}
