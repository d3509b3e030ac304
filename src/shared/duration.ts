const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const term = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/**
 * Parses a Go duration (`45s`, `1m0s`, `1.5h`, `500ms`) into milliseconds.
 * Returns undefined when the text is not one, so callers can name the flag.
 */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const body = text.replace(/^[-+]/, '');
  if (body === '') return undefined;
  let total = 0;
  term.lastIndex = 0;
  while (term.lastIndex < body.length) {
    const match = term.exec(body);
    if (!match) return undefined;
    total += Number(match[1]) * unitMs[match[2]!]!;
  }
  return sign * total;
}

/** Formats milliseconds as whole seconds, the unit of Envoy's drain flags. */
export function toWholeSeconds(ms: number): number {
  return Math.max(0, Math.round(ms / 1000));
}
