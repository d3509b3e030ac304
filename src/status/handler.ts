import { appHealthPrefix } from './app-probes/app-health.ts';
import type { CappedBody } from './prometheus.ts';
import { mergePrometheus } from './prometheus.ts';
import type { Readiness } from './readiness.ts';

/** An HTTP request as the handlers see it; `server.ts` adapts node:http to this. */
export interface StatusRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  remoteAddress: string;
  signal?: AbortSignal;
}

export interface StatusResponse {
  status: number;
  contentType: string;
  body: string;
  /** Runs once the response is sent (quitquitquit answers before stopping). */
  after?: () => void;
}

/** What the status endpoints read and do, injected so handlers test without sockets. */
export interface StatusDeps {
  readiness: { check(signal?: AbortSignal): Promise<Readiness> };
  agentMetrics: () => Promise<string>;
  envoyMetrics: (signal?: AbortSignal) => Promise<CappedBody>;
  epochs: () => unknown;
  /** The xDS relay, when it runs. */
  xds?: { debug(): unknown };
  /** Stop Envoy and exit 0, skipping the drain. */
  quit: () => void;
  /** Drain Envoy's listeners and keep running. */
  drain: () => Promise<void>;
  /** ISTIO_KUBE_APP_PROBERS: the verdict of the probe configured for an /app-health path. */
  appHealth?: (path: string, signal?: AbortSignal) => Promise<{ status: number; reason: string }>;
  /** ISTIO_PROMETHEUS_ANNOTATIONS: the app's part of /stats/prometheus. */
  appMetrics?: (signal?: AbortSignal) => Promise<string>;
}

interface Route {
  method: 'GET' | 'POST';
  /** Mutating endpoints answer local callers only. */
  localOnly?: boolean;
  handle: (deps: StatusDeps, request: StatusRequest) => Promise<StatusResponse> | StatusResponse;
}

export const prometheusContentType = 'text/plain; version=0.0.4; charset=utf-8';

const routes: Record<string, Route> = {
  '/healthz/ready': { method: 'GET', handle: ready },
  '/stats/prometheus': { method: 'GET', handle: metrics },
  '/quitquitquit': { method: 'POST', localOnly: true, handle: quit },
  '/drain': { method: 'POST', localOnly: true, handle: drain },
  '/debug/epochs': { method: 'GET', handle: (deps) => json(200, deps.epochs()) },
  '/debug/xds': { method: 'GET', handle: debugXds },
};

/** Routes one request; never throws (a failing handler is a 500). */
export async function handleStatus(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  const path = new URL(request.url, 'http://status').pathname;
  const route = Object.hasOwn(routes, path) ? routes[path] : path.startsWith(appHealthPrefix) && deps.appHealth ? appHealthRoute : undefined;
  if (!route) return text(404, `unknown path ${path}\n`);
  if (request.method !== route.method && !(route.method === 'GET' && request.method === 'HEAD')) {
    return text(405, `${path} takes ${route.method}\n`);
  }
  if (route.localOnly && !isLoopback(request.remoteAddress)) return text(403, `${path} is allowed from localhost only\n`);
  try {
    return await route.handle(deps, request);
  } catch (error) {
    return text(500, `${path} failed: ${(error as Error).message}\n`);
  }
}

const appHealthRoute: Route = { method: 'GET', handle: async (deps, request) => {
  const verdict = await deps.appHealth!(new URL(request.url, 'http://status').pathname, request.signal);
  return text(verdict.status, `${verdict.reason}\n`);
} };

async function ready(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  const readiness = await deps.readiness.check(request.signal);
  return readiness.ready ? text(200, 'ready\n') : text(503, `not ready: ${readiness.reason}\n`);
}

/** The agent's part always; Envoy's when admin answers, with a comment saying why not otherwise; then the app's. */
async function metrics(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  const [agent, envoy, app] = await Promise.all([deps.agentMetrics(), deps.envoyMetrics(request.signal), deps.appMetrics?.(request.signal) ?? '']);
  if (!envoy.ok || envoy.status !== 200) {
    const reason = envoy.ok ? `HTTP ${envoy.status}` : envoy.error;
    return { status: 200, contentType: prometheusContentType, body: mergePrometheus(mergePrometheus(agent, `# Envoy metrics unavailable: ${oneLine(reason)}\n`), app) };
  }
  const note = envoy.truncated ? '# Envoy metrics truncated at the size cap\n' : '';
  return { status: 200, contentType: prometheusContentType, body: mergePrometheus(mergePrometheus(agent, envoy.text) + note, app) };
}

function quit(deps: StatusDeps): StatusResponse {
  return { ...text(200, 'OK\n'), after: deps.quit };
}

async function drain(deps: StatusDeps): Promise<StatusResponse> {
  await deps.drain();
  return text(200, 'OK\n');
}

function debugXds(deps: StatusDeps): StatusResponse {
  return deps.xds ? json(200, deps.xds.debug()) : json(404, { error: 'the xDS relay is not running' });
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6. */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d+\.\d+\.\d+$/.test(v4) || address === '::1';
}

function text(status: number, body: string): StatusResponse {
  return { status, contentType: 'text/plain; charset=utf-8', body };
}

function json(status: number, value: unknown): StatusResponse {
  return { status, contentType: 'application/json', body: `${JSON.stringify(value, null, 2)}\n` };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 300);
}
