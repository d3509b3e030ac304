import { envoyComponents } from './envoy-components.ts';
import { durationRangeError, parseDuration, type DurationRange } from '../shared/duration.ts';

/*
 * Parsers of setting values as text, shared by every source (argv, env,
 * ProxyConfig, the declared default). They throw a plain Error whose
 * message the source wraps with its own name.
 */

/** A Go duration within range: past 2^31-1 ms a Node timer fires after 1 ms. */
export const durationIn = (range: DurationRange) => (text: string) => inRange(parseDuration(text), range);
export const duration = durationIn({});

/** TERMINATION_DRAIN_DURATION_SECONDS is whole seconds; the flag also takes a duration. */
export const secondsOrDuration = (text: string) => inRange(/^\d+$/.test(text) ? Number(text) * 1000 : parseDuration(text), {});

function inRange(ms: number | undefined, range: DurationRange): number {
  if (ms === undefined) throw new Error('not a Go duration (e.g. 45s, 1m0s, 500ms)');
  const error = durationRangeError(ms, range);
  if (error) throw new Error(error);
  return ms;
}

export const port = (text: string) => {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > 65535) throw new Error('not a port (0-65535)');
  return value;
};

export const count = (text: string) => {
  if (!/^\d+$/.test(text)) throw new Error('not a non-negative integer');
  return Number(text);
};

/**
 * Envoy starts one worker thread per unit, each with its own listeners,
 * connection pools and thread-local stats: more workers than cores only
 * cost memory and start time (100000 failed at run time, after minutes of
 * retries). 512 is above the core count of the largest common nodes.
 */
export const maxConcurrency = 512;

export const concurrency = (text: string) => {
  const value = count(text);
  if (value > maxConcurrency) throw new Error(`more than ${maxConcurrency} worker threads (0: one per core)`);
  return value;
};

export const envoyLevels = ['trace', 'debug', 'info', 'warning', 'warn', 'error', 'critical', 'off'] as const;

/** `component:level,…`, checked against the loggers of the Envoy we ship (envoy-components.ts). */
export const componentLevels = (text: string) => {
  for (const pair of text.split(',').filter((part) => part.trim() !== '')) {
    const [component = '', level = '', extra] = pair.trim().split(':');
    if (extra !== undefined || !level) throw new Error(`"${pair}" is not component:level`);
    if (!envoyComponents.has(component)) throw new Error(`"${component}" is not an Envoy log component (e.g. upstream, http, config)`);
    if (!(envoyLevels as readonly string[]).includes(level)) throw new Error(`"${level}" is not an Envoy log level (${envoyLevels.join(', ')})`);
  }
  return text;
};

/**
 * `--proxyLogLevel`: a level, optionally with `component:level` parts after
 * it (`info,misc:error`, what the `sidecar.istio.io/logLevel` annotation
 * gives), as Istio's agent takes it.
 */
export const envoyLogLevels = (text: string) => {
  const { level, components } = splitEnvoyLogLevel(text);
  if (level !== undefined && !(envoyLevels as readonly string[]).includes(level))
    throw new Error(`"${level}" is not an Envoy log level (${envoyLevels.join(', ')})`);
  if (components) componentLevels(components);
  return text;
};

/**
 * Istio's splitComponentLog: the part without a colon is the level, the
 * `component:level` parts are component levels (they replace
 * --proxyComponentLogLevel when present).
 */
export function splitEnvoyLogLevel(text: string): { level: string | undefined; components: string | undefined } {
  const parts = text.split(',').map((part) => part.trim()).filter(Boolean);
  const components = parts.filter((part) => part.includes(':'));
  const levels = parts.filter((part) => !part.includes(':'));
  if (levels.length > 1) throw new Error(`"${text}" names more than one level (${levels.join(', ')})`);
  return { level: levels[0], components: components.length > 0 ? components.join(',') : undefined };
}

/**
 * Go's strconv.ParseBool, which Istio reads every boolean with (env, flags,
 * node metadata): `ISTIO_META_DNS_CAPTURE=t` is true there, and here. The
 * only boolean parser of the agent; undefined for anything else.
 */
const goBools: Record<string, boolean> = {
  1: true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  0: false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

export const goBool = (text: string): boolean | undefined => (Object.hasOwn(goBools, text) ? goBools[text] : undefined);

export const bool = (text: string) => {
  const value = goBool(text);
  if (value === undefined) throw new Error(`"${text}" is not a boolean (true or false)`);
  return value;
};
