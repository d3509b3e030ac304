import { badFlag } from '../shared/errors.ts';
import { isMapping, type Mapping } from './types.ts';

/** The probe fields the agent takes over, and the /app-health suffix each gets (Istio's FormatProberURL). */
const probeKinds = [['readinessProbe', 'readyz'], ['livenessProbe', 'livez'], ['startupProbe', 'startupz']] as const;
export type ProbeField = (typeof probeKinds)[number][0];

/** One app container's probes after the rewrite, by its index in spec.containers. */
export interface ProbeRewrite {
  index: number;
  probes: Partial<Record<ProbeField, Mapping>>;
}

export interface AppProbes {
  rewrites: ProbeRewrite[];
  /** ISTIO_KUBE_APP_PROBERS: the original probes by /app-health path; undefined when there is none. */
  probers: string | undefined;
}

/**
 * Rewrites the app containers' HTTP, TCP and gRPC probes to
 * `GET :<statusPort>/app-health/<container>/<kind>` and collects the
 * originals as Istio's agent expects them (pkg/kube/inject/app_probe.go):
 * `{path: {httpGet|tcpSocket|grpc, timeoutSeconds}}`, named ports resolved.
 * `where` names the containers list in errors.
 */
export function rewriteAppProbes(containers: readonly Mapping[], statusPort: number, where: string): AppProbes {
  const probers: Record<string, Mapping> = {};
  const rewrites: ProbeRewrite[] = [];
  containers.forEach((container, index) => {
    const rewrite: ProbeRewrite = { index, probes: {} };
    for (const [field, kind] of probeKinds) {
      const probe = container[field];
      if (probe === undefined || probe === null) continue;
      const at = `${where}[${index}].${field}`;
      const path = `/app-health/${String(container['name'])}/${kind}`;
      const original = originalProber(probe, container, at);
      if (original === undefined) continue;
      probers[path] = original;
      rewrite.probes[field] = redirectedProbe(probe as Mapping, path, statusPort);
    }
    if (Object.keys(rewrite.probes).length > 0) rewrites.push(rewrite);
  });
  return { rewrites, probers: rewrites.length === 0 ? undefined : JSON.stringify(sortKeys(probers)) };
}

/** The prober the agent runs; undefined for exec probes, which the kubelet keeps running itself. */
function originalProber(probe: unknown, container: Mapping, at: string): Mapping | undefined {
  if (!isMapping(probe)) throw badFlag(at, 'must be a mapping');
  const timeout = probe['timeoutSeconds'];
  if (timeout !== undefined && !(Number.isSafeInteger(timeout) && (timeout as number) >= 0))
    throw badFlag(`${at}.timeoutSeconds`, 'must be a non-negative integer');
  const withTimeout = (action: Mapping) => ({ ...action, ...(timeout ? { timeoutSeconds: timeout } : {}) });
  if (probe['httpGet'] !== undefined) return withTimeout({ httpGet: resolvePort(probe['httpGet'], container, `${at}.httpGet`) });
  if (probe['tcpSocket'] !== undefined) return withTimeout({ tcpSocket: resolvePort(probe['tcpSocket'], container, `${at}.tcpSocket`) });
  if (probe['grpc'] !== undefined) return withTimeout({ grpc: checkGrpc(probe['grpc'], `${at}.grpc`) });
  return undefined;
}

/** A named port becomes the container's number for it, as Istio resolves it. */
function resolvePort(action: unknown, container: Mapping, at: string): Mapping {
  if (!isMapping(action)) throw badFlag(at, 'must be a mapping');
  const port = action['port'];
  if (typeof port === 'number') return checkedPort(action, port, at);
  if (typeof port !== 'string' || port === '') throw badFlag(`${at}.port`, 'must be a port number or a port name');
  if (/^\d+$/.test(port)) return checkedPort(action, Number(port), at);
  const ports = Array.isArray(container['ports']) ? (container['ports'] as unknown[]) : [];
  const named = ports.find((entry) => isMapping(entry) && entry['name'] === port) as Mapping | undefined;
  if (named === undefined) throw badFlag(`${at}.port`, `"${port}" is not the name of one of the container's ports`);
  return checkedPort(action, Number(named['containerPort']), at);
}

function checkedPort(action: Mapping, port: number, at: string): Mapping {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw badFlag(`${at}.port`, 'must be a port (1-65535)');
  return { ...action, port };
}

function checkGrpc(action: unknown, at: string): Mapping {
  if (!isMapping(action) || !Number.isInteger(action['port'])) throw badFlag(`${at}.port`, 'must be a port number');
  return checkedPort(action, action['port'] as number, at);
}

/** The probe the kubelet runs from now on: same timing, an HTTP GET on the agent. */
function redirectedProbe(probe: Mapping, path: string, statusPort: number): Mapping {
  const { httpGet, tcpSocket: _tcp, grpc: _grpc, ...timing } = probe;
  const kept = isMapping(httpGet) ? httpGet : {};
  // Kubelet -> HTTP -> agent; the agent speaks HTTPS to the app when the original did.
  const scheme = kept['scheme'] === 'HTTPS' ? { scheme: 'HTTP' } : {};
  return { ...timing, httpGet: { ...kept, path, port: statusPort, ...scheme } };
}

/** Go's encoding/json writes map keys sorted: the same pod always gives the same env value. */
function sortKeys(map: Record<string, Mapping>): Record<string, Mapping> {
  return Object.fromEntries(Object.keys(map).sort().map((key) => [key, map[key]!]));
}
