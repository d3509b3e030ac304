import { contentType as prometheusContentType } from '../metrics/exposition.ts';
import { canonicalPath, isLoopbackPeer } from './access.ts';
import { appHealthPrefix, appLifecyclePrefix } from './app-probes/app-health.ts';
import { mergedMetrics, oneLine } from './merged-metrics.ts';
import { envoyMetricsCapBytes, type StreamedBody } from './prometheus.ts';
import type { Readiness } from './readiness.ts';

/** An HTTP request as the handlers see it; `server.ts` adapts node:http to this. */
export interface StatusRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  /** The socket's peer; empty for the Unix socket of Envoy's readiness hop. */
  remoteAddress: string;
  signal?: AbortSignal;
}

export interface StatusResponse {
  status: number;
  contentType: string;
  /** Text, or chunks made as the client reads (the merged metrics), streamed through. */
  body: string | AsyncIterable<Buffer | string>;
  /** Runs once the response is sent (quitquitquit answers before stopping). */
  after?: () => void;
}

/** What the status endpoints read and do, injected so handlers test without sockets. */
export interface StatusDeps {
  readiness: { check(signal?: AbortSignal): Promise<Readiness> };
  agentMetrics: () => Promise<string>;
  /** Envoy's stats; undefined with PILOT_AGENT_MERGE_ENVOY_STATS=false (Prometheus scrapes Envoy's own port). */
  envoyMetrics?: (signal?: AbortSignal) => Promise<StreamedBody>;
  /** Istio's scrape counters (istio_agent_scrapes_total, istio_agent_scrape_failures_total{type}). */
  scrapes?: { scraped(): void; failed(type: 'envoy' | 'application' | 'agent'): void };
  /** Bounds the scrapes made at once (see scrape-gate.ts): true once this one may be made, held until `done` aborts. */
  scrapeGate?: { enter(peer: string, done: AbortSignal): Promise<boolean> };
  epochs: () => unknown;
  /** The xDS relay, when it runs; `servingLastKnownGoodSince` (ms) while it serves last-known-good config. */
  xds?: { debug(): unknown; servingLastKnownGoodSince(): number | undefined };
  /** The SDS server, when it runs. */
  sds?: { debug(): unknown };
  /** The DNS proxy, when on: its name table (summary, or whole). */
  dns?: { debug(withTable: boolean): unknown };
  /** Stop Envoy and exit 0, skipping the drain. */
  quit: () => void;
  /** Drain Envoy's listeners and keep running. */
  drain: () => Promise<boolean>;
  /** ISTIO_KUBE_APP_PROBERS: the verdict of the probe configured for an /app-health or /app-lifecycle path. */
  appHealth?: (path: string, signal?: AbortSignal) => Promise<{ status: number; reason: string }>;
  /** ISTIO_PROMETHEUS_ANNOTATIONS: the app's part of the merged metrics (its failures counted by it). */
  appMetrics?: (signal?: AbortSignal) => Promise<string>;
}

interface Route {
  method: 'GET' | 'POST';
  /** Mutating and debug endpoints answer loopback peers only. */
  localOnly?: boolean;
  handle: (deps: StatusDeps, request: StatusRequest) => Promise<StatusResponse> | StatusResponse;
}


const routes: Record<string, Route> = {
  '/healthz/ready': { method: 'GET', handle: ready },
  '/stats/prometheus': { method: 'GET', handle: metrics },
  // Prometheus's default path: the same merged metrics, as Istio's status port serves both.
  '/metrics': { method: 'GET', handle: metrics },
  '/quitquitquit': { method: 'POST', localOnly: true, handle: quit },
  '/drain': { method: 'POST', localOnly: true, handle: drain },
  '/debug/epochs': { method: 'GET', localOnly: true, handle: (deps) => json(200, deps.epochs()) },
  '/debug/xds': { method: 'GET', localOnly: true, handle: debugXds },
  '/debug/sds': { method: 'GET', localOnly: true, handle: debugSds },
  '/debug/ndsz': { method: 'GET', localOnly: true, handle: debugNdsz },
};

/** All that Envoy's readiness listener may reach: it serves the pod network. */
const readinessHopRoutes: Record<string, Route> = { '/healthz/ready': routes['/healthz/ready']! };

/** Routes one request to the status port; never throws (a failing handler is a 500). */
export function handleStatus(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  return dispatch(routes, deps, request);
}

/** Routes one request that came through Envoy's readiness listener: never local, readiness only. */
export function handleReadinessHop(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  return dispatch(readinessHopRoutes, deps, { ...request, remoteAddress: '' });
}

async function dispatch(table: Record<string, Route>, deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  const path = canonicalPath(request.url);
  if (path === undefined) return text(404, 'not a canonical path: no dot segments, escapes, doubled slashes or backslashes\n');
  const route = Object.hasOwn(table, path) ? table[path] : table === routes && isAppProbePath(path) && deps.appHealth ? appHealthRoute : undefined;
  if (!route) return text(404, `unknown path ${path}\n`);
  if (request.method !== route.method && !(route.method === 'GET' && request.method === 'HEAD')) {
    return text(405, `${path} takes ${route.method}\n`);
  }
  if (route.localOnly && !isLoopbackPeer(request.remoteAddress)) return text(403, `${path} answers 127.0.0.1 and ::1 only\n`);
  try {
    return await route.handle(deps, request);
  } catch (error) {
    return text(500, `${path} failed: ${(error as Error).message}\n`);
  }
}

const isAppProbePath = (path: string) => path.startsWith(appHealthPrefix) || path.startsWith(appLifecyclePrefix);

const appHealthRoute: Route = { method: 'GET', handle: async (deps, request) => {
  const verdict = await deps.appHealth!(new URL(request.url, 'http://status').pathname, request.signal);
  return text(verdict.status, `${verdict.reason}\n`);
} };

async function ready(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  const readiness = await deps.readiness.check(request.signal);
  const kept = lastKnownGood(deps);
  return readiness.ready ? text(200, `ready\n${kept}`) : text(503, `not ready: ${readiness.reason}\n${kept}`);
}

/** Ready or not, say when Envoy runs on config the agent kept rather than on the discovery server's. */
function lastKnownGood(deps: StatusDeps): string {
  const since = deps.xds?.servingLastKnownGoodSince();
  return since === undefined ? '' : `serving last-known-good config since ${new Date(since).toISOString()}: the discovery server cannot be reached\n`;
}

/**
 * The agent's part, then Envoy's (a comment saying why when admin does not
 * answer), then the app's: one failing part never costs the others. All
 * three start at once; Envoy's streams through as the client reads.
 */
async function metrics(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse> {
  if (deps.scrapeGate && request.signal && !(await deps.scrapeGate.enter(request.remoteAddress, request.signal))) {
    return text(503, 'too many scrapes at once from this peer or in all; one at a time is always served\n');
  }
  deps.scrapes?.scraped();
  const app = deps.appMetrics?.(request.signal);
  const [agent, envoy] = await Promise.all([
    deps.agentMetrics().catch((error: unknown) => (deps.scrapes?.failed('agent'), `# agent metrics unavailable: ${oneLine((error as Error).message)}\n`)),
    deps.envoyMetrics?.(request.signal),
  ]);
  const envoyFailed = () => deps.scrapes?.failed('envoy');
  // The text format whatever the Accept, as Istio's agent serves Envoy's part: rewritten as OpenMetrics, Envoy's
  // counters gain `_total` and clash with its own `…_total` counters (envoy_cluster_upstream_rq{,_total}).
  const body = mergedMetrics({ agent, envoy, app, envoyCapBytes: envoyMetricsCapBytes, envoyFailed, signal: request.signal });
  return { status: 200, contentType: prometheusContentType, body };
}

function quit(deps: StatusDeps): StatusResponse {
  return { ...text(200, 'OK\n'), after: deps.quit };
}

async function drain(deps: StatusDeps): Promise<StatusResponse> {
  // Readiness turns false either way; the caller learns whether Envoy is draining too.
  if (await deps.drain()) return text(200, 'OK\n');
  return text(502, 'Envoy refused the drain calls; see the agent\'s log\n');
}

function debugXds(deps: StatusDeps): StatusResponse {
  return deps.xds ? json(200, deps.xds.debug()) : json(404, { error: 'the xDS relay is not running' });
}

/**
 * Which secrets each SDS stream holds, their serials and expiry, and what
 * streams wait for and why. Never key material: the SDS server's debug view
 * carries names, serials, dates and file paths only.
 */
function debugSds(deps: StatusDeps): StatusResponse {
  return deps.sds ? json(200, deps.sds.debug()) : json(404, { error: 'the SDS server is not running' });
}

/** The name table: version, age and size; `?summary` leaves the names out (100,000 of them are megabytes). */
function debugNdsz(deps: StatusDeps, request: StatusRequest): StatusResponse {
  if (!deps.dns) return json(404, { error: 'DNS is off (ISTIO_META_DNS_CAPTURE, ISTIO_META_ENABLE_DNS_SERVER)' });
  return json(200, deps.dns.debug(!new URL(request.url, 'http://status').searchParams.has('summary')));
}

function text(status: number, body: string): StatusResponse {
  return { status, contentType: 'text/plain; charset=utf-8', body };
}

function json(status: number, value: unknown): StatusResponse {
  return { status, contentType: 'application/json', body: `${JSON.stringify(value, null, 2)}\n` };
}
