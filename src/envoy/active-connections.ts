import type { AdminClient } from './admin.ts';

/** Admin query for every downstream_cx_active gauge in use. */
export const activeConnectionsPath = '/stats?usedonly&filter=downstream_cx_active$';

/**
 * Sums the downstream connections still open on the proxy's own listeners,
 * from admin /stats text. Counts listener-level gauges only (http.* repeats
 * them; per-worker ones split them), and leaves out admin and the agent's own
 * listeners (`ignoredPorts`: Prometheus, readiness), which would otherwise
 * count the very connection that asks. Undefined when Envoy exposes no such
 * gauge (no listener has had a connection yet).
 */
export function sumActiveConnections(statsText: string, ignoredPorts: readonly number[] = []): number | undefined {
  let total: number | undefined;
  for (const line of statsText.split('\n')) {
    const [name, value] = line.split(': ');
    if (!name || value === undefined || !countsTowardsDrain(name, ignoredPorts)) continue;
    const count = Number(value.trim());
    if (Number.isInteger(count)) total = (total ?? 0) + count;
  }
  return total;
}

function countsTowardsDrain(name: string, ignoredPorts: readonly number[]): boolean {
  if (!name.startsWith('listener.') || !name.endsWith('.downstream_cx_active')) return false;
  if (name.startsWith('listener.admin.') || name.includes('.worker_')) return false;
  // Internal listeners (a waypoint's connect_originate, main_internal…) carry pipes between filter chains, no client: as Istio, never counted.
  if (name.startsWith('listener.envoy_internal_')) return false;
  return !ignoredPorts.some((port) => port > 0 && name.endsWith(`_${port}.downstream_cx_active`));
}

/** Asks admin; undefined when admin does not answer or has no such gauge. */
export async function activeConnections(admin: AdminClient, ignoredPorts: readonly number[], signal?: AbortSignal): Promise<number | undefined> {
  const result = await admin.get(activeConnectionsPath, signal);
  if (!result.ok || result.status !== 200) return undefined;
  return sumActiveConnections(result.body, ignoredPorts);
}
