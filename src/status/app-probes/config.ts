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
const probePath = /^\/app-health\/[^/]+\/(livez|readyz|startupz)$/;

type Json = Record<string, unknown>;

/**
 * Parses the injector's probes, keyed by the /app-health path that replaces
 * each. The agent probes its own pod only: a host other than loopback or the
 * pod's IP is probed on loopback instead (as Istio does), with a warning.
 * Throws BAD_ENV naming the variable.
 */
export function parseAppProbers(value: string | undefined, podIp?: string, warn: (message: string) => void = () => undefined): Map<string, AppProbe> {
  const probes = new Map<string, AppProbe>();
  if (value === undefined || value.trim() === '') return probes;
  const fail = (reason: string) => badEnv(probersEnv, reason);
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw badEnv(probersEnv, `not JSON (${(error as Error).message})`, error);
  }
  if (!isObject(parsed)) throw fail('must be a JSON object keyed by /app-health/<container>/<livez|readyz|startupz>');
  for (const [path, prober] of Object.entries(parsed)) {
    if (!probePath.test(path)) throw fail(`key ${JSON.stringify(path)} is not /app-health/<container>/<livez|readyz|startupz>`);
    probes.set(path, parseProbe(prober, { fail: (reason) => fail(`${path}: ${reason}`), warn: (message) => warn(`${path}: ${message}`), podIp }));
  }
  return probes;
}

function parseProbe(prober: unknown, { fail, warn, podIp }: Context): AppProbe {
  if (!isObject(prober)) throw fail('must be an object');
  const kinds = (['httpGet', 'tcpSocket', 'grpc'] as const).filter((kind) => prober[kind] !== undefined && prober[kind] !== null);
  if (kinds.length !== 1) throw fail('needs exactly one of httpGet, tcpSocket, grpc');
  const timeout = prober.timeoutSeconds ?? defaultTimeoutSeconds;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0) throw fail('timeoutSeconds must be a whole number of seconds');
  const kind = kinds[0]!;
  const body = prober[kind];
  if (!isObject(body)) throw fail(`${kind} must be an object`);
  const context = { fail: (reason: string) => fail(`${kind}: ${reason}`), warn, podIp };
  const action = kind === 'httpGet' ? httpAction(body, context) : kind === 'tcpSocket' ? tcpAction(body, context) : grpcAction(body, context);
  return { action, timeoutMs: (timeout || defaultTimeoutSeconds) * 1000 };
}

interface Context {
  fail: (reason: string) => Error;
  warn: (message: string) => void;
  podIp?: string;
}

function httpAction(body: Json, context: Context): ProbeAction {
  const scheme = String(body.scheme ?? 'HTTP').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw context.fail(`scheme ${JSON.stringify(body.scheme)} is not HTTP or HTTPS`);
  const path = body.path ?? '/';
  if (typeof path !== 'string' || /[\s#]/.test(path)) throw context.fail(`path ${JSON.stringify(path)} must be a string without spaces or #`);
  const absolute = path.startsWith('/') ? path : `/${path}`;
  return { kind: 'http', scheme, host: host(body, context), port: port(body, context), path: absolute, headers: headers(body.httpHeaders, context) };
}

function tcpAction(body: Json, context: Context): ProbeAction {
  return { kind: 'tcp', host: host(body, context), port: port(body, context) };
}

function grpcAction(body: Json, context: Context): ProbeAction {
  const service = body.service ?? '';
  if (typeof service !== 'string') throw context.fail('service must be a string');
  return { kind: 'grpc', host: host(body, context), port: port(body, context), service };
}

/** The injector resolves named ports, so only numbers arrive here. */
function port(body: Json, context: Context): number {
  const value = typeof body.port === 'string' && /^\d+$/.test(body.port) ? Number(body.port) : body.port;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw context.fail(`port ${JSON.stringify(body.port)} is not a number in 1-65535`);
  return value;
}

function host(body: Json, context: Context): string {
  const value = body.host ?? '';
  if (value === '' || value === 'localhost' || value === '127.0.0.1') return '127.0.0.1';
  if (value === '::1') return '::1';
  if (typeof value === 'string' && value === context.podIp && isIP(value)) return value;
  if (typeof value !== 'string') throw context.fail(`host ${JSON.stringify(value)} is not a string`);
  context.warn(`host ${JSON.stringify(value)} is neither loopback nor the pod IP (INSTANCE_IP); probing 127.0.0.1`);
  return '127.0.0.1';
}

function headers(value: unknown, context: Context): [string, string][] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw context.fail('httpHeaders must be a list of {name, value}');
  return value.map((header) => {
    if (!isObject(header) || typeof header.name !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header.name) || typeof header.value !== 'string' || /[\r\n\0]/.test(header.value)) {
      throw context.fail(`httpHeaders entry ${JSON.stringify(header)} is not a valid {name, value}`);
    }
    return [header.name, header.value];
  });
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
