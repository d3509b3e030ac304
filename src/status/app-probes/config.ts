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
 * each. Hosts other than loopback or the pod's own IP are refused: the agent
 * probes its own pod, nothing else. Throws BAD_ENV naming the variable.
 */
export function parseAppProbers(value: string | undefined, podIp?: string): Map<string, AppProbe> {
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
    probes.set(path, parseProbe(prober, (reason) => fail(`${path}: ${reason}`), podIp));
  }
  return probes;
}

function parseProbe(prober: unknown, fail: (reason: string) => Error, podIp?: string): AppProbe {
  if (!isObject(prober)) throw fail('must be an object');
  const kinds = (['httpGet', 'tcpSocket', 'grpc'] as const).filter((kind) => prober[kind] !== undefined && prober[kind] !== null);
  if (kinds.length !== 1) throw fail('needs exactly one of httpGet, tcpSocket, grpc');
  const timeout = prober.timeoutSeconds ?? defaultTimeoutSeconds;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0) throw fail('timeoutSeconds must be a whole number of seconds');
  const kind = kinds[0]!;
  const body = prober[kind];
  if (!isObject(body)) throw fail(`${kind} must be an object`);
  const context = { fail: (reason: string) => fail(`${kind}: ${reason}`), podIp };
  const action = kind === 'httpGet' ? httpAction(body, context) : kind === 'tcpSocket' ? tcpAction(body, context) : grpcAction(body, context);
  return { action, timeoutMs: (timeout || defaultTimeoutSeconds) * 1000 };
}

interface Context {
  fail: (reason: string) => Error;
  podIp?: string;
}

function httpAction(body: Json, context: Context): ProbeAction {
  const scheme = String(body.scheme ?? 'HTTP').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw context.fail(`scheme ${JSON.stringify(body.scheme)} is not HTTP or HTTPS`);
  const path = body.path ?? '/';
  if (typeof path !== 'string' || !path.startsWith('/')) throw context.fail('path must start with /');
  return { kind: 'http', scheme, host: host(body, context), port: port(body, context), path, headers: headers(body.httpHeaders, context) };
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
  throw context.fail(`host ${JSON.stringify(value)} is neither loopback nor the pod IP (INSTANCE_IP)`);
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
