import { badFlag } from '../shared/errors.ts';

/** The scrape annotations Istio moves to the agent, keyed as it matches them (non-alphanumerics as `_`). */
const scrapeKeys = { prometheus_io_scrape: 'scrape', prometheus_io_path: 'path', prometheus_io_port: 'port' } as const;

export interface PrometheusMerge {
  /** New annotation values; null removes the key. */
  annotations: Record<string, string | null>;
  /** ISTIO_PROMETHEUS_ANNOTATIONS, the app's own settings; undefined when it had none. */
  env: string | undefined;
}

const sanitize = (key: string) => key.replace(/[^a-zA-Z0-9_]/g, '_');

/**
 * Istio's metrics merge (pkg/kube/inject/webhook.go applyPrometheusMerge):
 * unless the pod says scrape "false", its prometheus.io/{scrape,path,port}
 * move into ISTIO_PROMETHEUS_ANNOTATIONS and the annotations point at the
 * agent's merged /stats/prometheus. Undefined when nothing is to change.
 */
export function mergePrometheusAnnotations(annotations: Readonly<Record<string, string>>, statusPort: number, where: string): PrometheusMerge | undefined {
  const found: Record<string, string> = {};
  const keys: string[] = [];
  for (const [key, value] of Object.entries(annotations)) {
    const field = scrapeKeys[sanitize(key) as keyof typeof scrapeKeys];
    if (field === undefined) continue;
    found[field] = value;
    keys.push(key);
  }
  if (/^(false|0|f)$/i.test(found['scrape'] ?? '')) return undefined;
  // Already pointing at the agent: injected before, or the user's choice.
  if (found['port'] === String(statusPort)) return undefined;
  checkPort(found['port'], where, keys.find((key) => sanitize(key) === 'prometheus_io_port'), statusPort);
  const env = keys.length === 0 ? undefined : JSON.stringify({ scrape: found['scrape'] ?? '', path: found['path'] ?? '', port: found['port'] ?? '' });
  return {
    annotations: {
      ...Object.fromEntries(keys.map((key) => [key, null])),
      'prometheus.io/port': String(statusPort),
      'prometheus.io/path': '/stats/prometheus',
      'prometheus.io/scrape': 'true',
    },
    env,
  };
}

function checkPort(port: string | undefined, where: string, key: string | undefined, statusPort: number): void {
  if (port === undefined) return;
  const number = Number(port);
  if (!/^\d+$/.test(port) || number < 1 || number > 65535) throw badFlag(`${where}["${key}"]`, `"${port}" is not a port (1-65535)`);
  if (number === statusPort) throw badFlag(`${where}["${key}"]`, `${port} is the agent's status port`);
}
