import { isIP } from 'node:net';
import { badEnv } from '../../shared/errors.ts';

export const probersEnv = 'ISTIO_KUBE_APP_PROBERS';

export type ProbeAction =
  | { kind: 'http'; scheme: 'http' | 'https'; host: string; port: number; path: string; headers: [string, string][] }
  | { kind: 'tcp'; host: string; port: number }
  | { kind: 'grpc'; host: string; port: number; service: string };

export interface AppProbe {
  action: ProbeAction;
  timeoutMs: number;
}

/** The kubelet's default probe timeout, used when the injector passes none. */
const defaultTimeoutSeconds = 1;
/** Istio's keys: probes under /app-health, lifecycle hooks (preStop, postStart) under /app-lifecycle. */
const probePath = /^\/(app-health|app-lifecycle)\/[^/]+\/(livez|readyz|startupz|prestopz|poststartz)$/;
const pathShape = '/app-health/<container>/<livez|readyz|startupz> or /app-lifecycle/<container>/<prestopz|poststartz>';

type Json = Record<string, unknown>;

/**
 * Parses the injector's probes, keyed by the /app-health (or /app-lifecycle)
 * path that replaces each. Every probe goes to `destination` (the pod IP, as
 * the kubelet's would; see probe-target.ts), whatever host the probe names:
 * the agent probes its own pod only, as Istio's. A probe that names another
 * host gets a warning. Throws BAD_ENV naming the variable.
 */
export function parseAppProbers(
  value: string | undefined,
  destination = '127.0.0.1',
  warn: (message: string) => void = () => undefined,
): Map<string, AppProbe> {
  const probes = new Map<string, AppProbe>();
  if (value === undefined || value.trim() === '') return probes;
  const fail = (reason: string) => badEnv(probersEnv, reason);
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw badEnv(probersEnv, `not JSON (${(error as Error).message})`, error);
  }
  if (!isObject(parsed)) throw fail(`must be a JSON object keyed by ${pathShape}`);
  for (const [path, prober] of Object.entries(parsed)) {
    if (!probePath.test(path)) throw fail(`key ${JSON.stringify(path)} is not ${pathShape}`);
    probes.set(path, parseAppProbe(prober, { fail: (reason) => fail(`${path}: ${reason}`), warn: (message) => warn(`${path}: ${message}`), destination }));
  }
  return probes;
}

/** One Kubernetes-shaped probe (httpGet, tcpSocket or grpc, timeoutSeconds), aimed at `destination`; `fail` makes the error to throw. */
export function parseAppProbe(prober: unknown, { fail, warn, destination }: ProbeParseContext): AppProbe {
  if (!isObject(prober)) throw fail('must be an object');
  const kinds = (['httpGet', 'tcpSocket', 'grpc'] as const).filter((kind) => prober[kind] !== undefined && prober[kind] !== null);
  if (kinds.length !== 1) throw fail('needs exactly one of httpGet, tcpSocket, grpc');
  const timeout = prober.timeoutSeconds ?? defaultTimeoutSeconds;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0) throw fail('timeoutSeconds must be a whole number of seconds');
  const kind = kinds[0]!;
  const body = prober[kind];
  if (!isObject(body)) throw fail(`${kind} must be an object`);
  const context = { fail: (reason: string) => fail(`${kind}: ${reason}`), warn, destination };
  const action = kind === 'httpGet' ? httpAction(body, context) : kind === 'tcpSocket' ? tcpAction(body, context) : grpcAction(body, context);
  return { action, timeoutMs: (timeout || defaultTimeoutSeconds) * 1000 };
}

export interface ProbeParseContext {
  fail: (reason: string) => Error;
  warn: (message: string) => void;
  destination: string;
}

function httpAction(body: Json, context: ProbeParseContext): ProbeAction {
  const scheme = String(body.scheme ?? 'HTTP').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw context.fail(`scheme ${JSON.stringify(body.scheme)} is not HTTP or HTTPS`);
  const path = body.path ?? '/';
  if (typeof path !== 'string' || /[\s#]/.test(path)) throw context.fail(`path ${JSON.stringify(path)} must be a string without spaces or #`);
  const absolute = path.startsWith('/') ? path : `/${path}`;
  return { kind: 'http', scheme, host: host(body, context), port: port(body, context), path: absolute, headers: headers(body.httpHeaders, context) };
}

function tcpAction(body: Json, context: ProbeParseContext): ProbeAction {
  return { kind: 'tcp', host: host(body, context), port: port(body, context) };
}

function grpcAction(body: Json, context: ProbeParseContext): ProbeAction {
  const service = body.service ?? '';
  if (typeof service !== 'string') throw context.fail('service must be a string');
  return { kind: 'grpc', host: host(body, context), port: port(body, context), service };
}

/** The injector resolves named ports, so only numbers arrive here. */
function port(body: Json, context: ProbeParseContext): number {
  const value = typeof body.port === 'string' && /^\d+$/.test(body.port) ? Number(body.port) : body.port;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535)
    throw context.fail(`port ${JSON.stringify(body.port)} is not a number in 1-65535`);
  return value;
}

/** The probe's own host is not a target: the pod's address is (a different one is worth a warning). */
function host(body: Json, context: ProbeParseContext): string {
  const value = body.host ?? '';
  if (typeof value !== 'string') throw context.fail(`host ${JSON.stringify(value)} is not a string`);
  const samePod = value === '' || value === context.destination || value === 'localhost' || (isIP(value) !== 0 && /^(127\.|::1$)/.test(value));
  if (!samePod) context.warn(`host ${JSON.stringify(value)} is ignored: the agent probes its own pod, at ${context.destination}`);
  return context.destination;
}

function headers(value: unknown, context: ProbeParseContext): [string, string][] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw context.fail('httpHeaders must be a list of {name, value}');
  return value.map((header) => {
    if (
      !isObject(header) ||
      typeof header.name !== 'string' ||
      !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header.name) ||
      typeof header.value !== 'string' ||
      /[\r\n\0]/.test(header.value)
    ) {
      throw context.fail(`httpHeaders entry ${JSON.stringify(header)} is not a valid {name, value}`);
    }
    return [header.name, header.value];
  });
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
