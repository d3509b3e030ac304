import { declareEnvSettings } from './env-settings.ts';
import { parseCidrs } from '../shared/cidr.ts';
import { bool, count, durationIn } from './parse-values.ts';

const positive = (text: string) => {
  const value = count(text);
  if (value < 1) throw new Error('must be at least 1');
  return value;
};

const hosts = (text: string) => new Set(text.split(',').map((host) => host.trim()).filter(Boolean));

/** Wasm remote load: the agent fetches remote Wasm modules for Envoy (Istio's env names and defaults). */
export const wasmEnv = declareEnvSettings({
  enabled: {
    env: 'ISTIO_AGENT_ENABLE_WASM_REMOTE_LOAD_CONVERSION',
    default: 'true',
    parse: bool,
    description: 'true: ECDS Wasm filters with remote code are fetched by the agent and handed to Envoy as local files',
  },
  cacheDir: {
    env: 'WASM_CACHE_DIR',
    default: '/var/lib/istio/data',
    description: 'Where fetched Wasm modules are kept (Istio fixes it at /var/lib/istio/data)',
  },
  requestTimeoutMs: {
    env: 'WASM_HTTP_REQUEST_TIMEOUT',
    default: '15s',
    parse: durationIn({ minMs: 1 }),
    description: 'Timeout of each HTTP request of a Wasm fetch',
  },
  maxRetries: {
    env: 'WASM_HTTP_REQUEST_MAX_RETRIES',
    default: '5',
    parse: positive,
    description: 'Attempts per HTTP request of a Wasm fetch, with backoff from 500 ms',
  },
  moduleExpiryMs: {
    env: 'WASM_MODULE_EXPIRY',
    default: '24h',
    parse: durationIn({ minMs: 1 }),
    description: 'A cached Wasm module unused this long is removed',
  },
  purgeIntervalMs: {
    env: 'WASM_PURGE_INTERVAL',
    default: '1h',
    parse: durationIn({ minMs: 1000 }),
    description: 'How often expired Wasm modules are looked for',
  },
  insecureRegistries: {
    env: 'WASM_INSECURE_REGISTRIES',
    default: '',
    parse: hosts,
    description: 'Comma-separated hosts (host:port; * for all) whose TLS certificate is not verified',
  },
  blockedCidrs: {
    env: 'BLOCKED_CIDRS_IN_WASM_FETCH',
    default: '',
    parse: parseCidrs,
    description: 'Comma-separated CIDRs a Wasm fetch never connects to, besides link-local and cloud metadata addresses',
  },
  maxBytes: {
    env: 'ISTIO_WASM_MAX_BINARY_SIZE_BYTES',
    default: String(256 * 1024 * 1024),
    parse: positive,
    description: 'Largest Wasm module (and download) accepted',
  },
});
