import { Counter, Gauge, type Registry } from '../metrics/index.ts';
import type { SecretStore } from './secret-store.ts';

export interface SdsMetrics {
  pushes: Counter<'resource'>;
  errors: Counter<'reason'>;
}

/** Why a secret could not be served or was refused, as the errors metric labels it. */
export type SdsErrorReason = 'nack' | 'bad_request' | 'unknown_resource' | 'bad_files' | 'connection' | 'connection_limit' | 'name_limit' | 'watch_limit';

/**
 * SDS pushes and errors, and the seconds left on each stored certificate,
 * computed when scraped so it never goes stale.
 */
export function registerSdsMetrics(registry: Registry, store: SecretStore, now: () => number): SdsMetrics {
  const registers = [registry];
  new Gauge({
    name: 'istio_agent_cert_expiry_seconds',
    help: 'Seconds until the certificate of each stored SDS secret expires (negative: expired), by resource_name, as Istio names it',
    labelNames: ['resource_name'],
    registers,
    collect() {
      this.reset();
      for (const [name, entry] of store.entries()) this.set({ resource_name: name }, Math.round((entry.expiresAt - now()) / 1000));
    },
  });
  return {
    pushes: new Counter({ name: 'istio_agent_sds_pushes_total', help: 'Secrets sent to Envoy over SDS, per resource', labelNames: ['resource'], registers }),
    errors: new Counter({
      name: 'istio_agent_sds_errors_total',
      help: 'SDS failures: NACKs, malformed requests, unknown names, unservable files, refusals at a cap (connections, names per stream, file watches)',
      labelNames: ['reason'],
      registers,
    }),
  };
}
