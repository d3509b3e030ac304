// Content negotiation of the status port: gzip for any answer when the client
// takes it. The merged metrics are the text format whatever the Accept (handler.ts).

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

/** True when the client takes gzip (`gzip` or `*` with q > 0; an explicit `gzip;q=0` refuses it). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  const all = (acceptEncoding ?? '').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  if (all.includes('gzip')) return preferences(acceptEncoding).some((entry) => entry.value === 'gzip');
  return preferences(acceptEncoding).some((entry) => entry.value === '*');
}
