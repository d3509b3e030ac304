const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const termSource = String.raw`(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)`;
/** Terms back to back, nothing between or around them (`1sx2s` is not a duration). */
const wholeText = new RegExp(`^(?:${termSource})+$`);
const term = new RegExp(termSource, 'g');

/**
 * Kept over `ms` (2.1, already in node_modules): ms('1m30s') is undefined, and
 * Go's compound form is what Istio's flags and defaults use ("1m0s").
 *
 * Parses a Go duration (`45s`, `1m0s`, `1.5h`, `500ms`) into milliseconds.
 * Returns undefined when the text is not one, so callers can name the flag.
 */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const body = text.replace(/^[-+]/, '');
  // No hand-written scanning loop: one that stopped advancing would spin on a
  // setting's text; matchAll always moves on. The terms are unambiguous (a unit
  // is letters, a number digits), so the check is linear in the text.
  if (!wholeText.test(body)) return undefined;
  let total = 0;
  for (const [, amount, unit] of body.matchAll(term)) total += Number(amount) * unitMs[unit!]!;
  return sign * total;
}

/**
 * The longest delay Node's timers keep: a longer one fires after 1 ms, so
 * `--certResync 1000h` would spin. About 24.8 days.
 */
export const maxTimerMs = 2 ** 31 - 1;

export interface DurationRange {
  /** Shortest accepted value, in ms; periodic work needs a floor. */
  minMs?: number;
  /** 0 is accepted below minMs when it means "off". */
  zeroMeansOff?: boolean;
}

/** Why `ms` is out of range, or undefined when it is in. */
export function durationRangeError(ms: number, range: DurationRange = {}): string | undefined {
  if (ms < 0) return 'must not be negative';
  if (ms > maxTimerMs) return `must be at most ${formatDuration(maxTimerMs)} (2^31-1 ms, the longest timer)`;
  if (ms === 0 && range.zeroMeansOff) return undefined;
  if (range.minMs !== undefined && ms < range.minMs) {
    return `must be at least ${formatDuration(range.minMs)}${range.zeroMeansOff ? ' (or 0s: off)' : ''}`;
  }
  return undefined;
}

/** Milliseconds as a Go-style duration, for messages (`10ms`, `1s`, `596h31m23.647s`). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = (ms % 60_000) / 1000;
  return `${hours ? `${hours}h` : ''}${hours || minutes ? `${minutes}m` : ''}${seconds}s`;
}

/** Formats milliseconds as whole seconds, the unit of Envoy's drain flags. */
export function toWholeSeconds(ms: number): number {
  return Math.max(0, Math.round(ms / 1000));
}
