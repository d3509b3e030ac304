import { parseBoundedJson } from './bounded-json.ts';
import { checkProxyConfig } from '../settings/proxy-config-fields.ts';
import { goBool } from '../settings/parse-values.ts';

/**
 * The JSON type istiod declares for each node metadata key (Istio's
 * `NodeMetadata`/`BootstrapNodeMetadata`, pkg/model/proxy.go). istiod closes
 * the stream with INVALID_ARGUMENT when a value does not unmarshal into it.
 */
export type MetadataKind = 'string' | 'port' | 'stringBool' | 'stringList' | 'stringArray' | 'stringMap' | 'podPorts' | 'proxyConfig';

const kindsByKey: Record<Exclude<MetadataKind, 'string'>, readonly string[]> = {
  port: ['ENVOY_STATUS_PORT', 'ENVOY_PROMETHEUS_PORT', 'ENVOY_SECURE_METRICS_PORT', 'ENVOY_SECURE_MERGED_METRICS_PORT'],
  stringBool: [
    'ENABLE_SELF_DISCOVERY', 'DNS_CAPTURE', 'DNS_AUTO_ALLOCATE', 'ENABLE_HBONE', 'DISABLE_HBONE_SEND', 'EXIT_ON_ZERO_ACTIVE_CONNECTIONS',
    'INBOUND_LISTENER_EXACT_BALANCE', 'OUTBOUND_LISTENER_EXACT_BALANCE', 'METADATA_DISCOVERY', 'ENVOY_SKIP_DEPRECATED_LOGS',
  ],
  stringList: ['INSTANCE_IPS', 'REQUESTED_NETWORK_VIEW'],
  stringArray: ['PILOT_SAN'],
  stringMap: ['LABELS', 'STATIC_LABELS', 'ANNOTATIONS', 'PLATFORM_METADATA'],
  podPorts: ['POD_PORTS'],
  proxyConfig: ['PROXY_CONFIG'],
};

/** Keys istiod types as plain strings; a number or object there is refused. */
const stringKeys = [
  'ISTIO_VERSION', 'ISTIO_REVISION', 'NAMESPACE', 'NODE_NAME', 'WORKLOAD_NAME', 'INTERCEPTION_MODE', 'SERVICE_ACCOUNT', 'HTTP_PROXY_PORT',
  'MESH_ID', 'CLUSTER_ID', 'NETWORK', 'TLS_SERVER_CERT_CHAIN', 'TLS_SERVER_KEY', 'TLS_SERVER_ROOT_CERT', 'TLS_CLIENT_CERT_CHAIN',
  'TLS_CLIENT_KEY', 'TLS_CLIENT_ROOT_CERT', 'BASE', 'IDLE_TIMEOUT', 'HTTP10', 'GENERATOR', 'DNS_PROXY_ADDR', 'AUTO_REGISTER_GROUP',
  'WORKLOAD_ENTRY', 'UNPRIVILEGED_POD', 'STS_PORT', 'CLOUDRUN_ADDR', 'WORKLOAD_IDENTITY_SOCKET_FILE', 'NAME', 'OWNER',
  'OUTLIER_LOG_PATH', 'APP_CONTAINERS', 'ISTIO_PROXY_SHA',
];

const kinds = new Map<string, MetadataKind>([
  ...stringKeys.map((key) => [key, 'string'] as const),
  ...Object.entries(kindsByKey).flatMap(([kind, keys]) => keys.map((key) => [key, kind as MetadataKind] as const)),
]);

/** The declared kind of a key; undefined for keys istiod does not type (kept as given). */
export const metadataKind = (key: string): MetadataKind | undefined => kinds.get(key);

export type Coerced = { ok: true; value: unknown } | { ok: false; reason: string };

const fail = (reason: string): Coerced => ({ ok: false, reason });
const ok = (value: unknown): Coerced => ({ ok: true, value });

/**
 * Converts a value (a string from ISTIO_META_*, any JSON from
 * ISTIO_METAJSON_*) to the type istiod declares for the key.
 */
export function coerceMetadata(key: string, value: unknown): Coerced {
  const kind = metadataKind(key);
  if (kind === undefined) return ok(value);
  return coercers[kind](typeof value === 'string' && objectKinds.has(kind) ? parseText(value) : ok(value));
}

const objectKinds: ReadonlySet<MetadataKind> = new Set(['stringMap', 'proxyConfig']);

function parseText(text: string): Coerced {
  const parsed = parseBoundedJson(text);
  return parsed.ok ? ok(parsed.value) : fail(parsed.reason);
}

/** Each coercer gets the value, already JSON-parsed for object kinds. */
const coercers: Record<MetadataKind, (input: Coerced) => Coerced> = {
  string: (input) => then(input, (value) => (typeof value === 'string' ? ok(value) : fail('must be a string'))),
  port: (input) => then(input, toPort),
  stringBool: (input) => then(input, toStringBool),
  stringList: (input) => then(input, toStringList),
  stringArray: (input) => then(input, toStringArray),
  stringMap: (input) => then(input, toStringMap),
  podPorts: (input) => then(input, toPodPorts),
  proxyConfig: (input) => then(input, (value) => {
    const problem = checkProxyConfig(value);
    return problem ? fail(problem) : ok(value);
  }),
};

const then = (input: Coerced, next: (value: unknown) => Coerced): Coerced => (input.ok ? next(input.value) : input);

function toPort(value: unknown): Coerced {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 0 || number > 65535) return fail('must be a port number (an integer 0-65535)');
  return ok(number);
}

/** Go's strconv.ParseBool spellings; istiod wants the result as the string "true" or "false". */
function toStringBool(value: unknown): Coerced {
  if (typeof value === 'boolean') return ok(String(value));
  if (typeof value !== 'string') return fail('must be a boolean string ("true" or "false")');
  const parsed = goBool(value);
  if (parsed !== undefined) return ok(String(parsed));
  return fail(`"${value}" is not a boolean ("true" or "false")`);
}

/** A comma-separated string in istiod's eyes; a JSON array of strings is joined for it. */
function toStringList(value: unknown): Coerced {
  if (typeof value === 'string') return ok(value);
  if (isStringArray(value)) return ok(value.join(','));
  return fail('must be a comma-separated string');
}

function toStringArray(value: unknown): Coerced {
  if (typeof value === 'string') return ok(value === '' ? [] : value.split(','));
  return isStringArray(value) ? ok(value) : fail('must be an array of strings');
}

function toStringMap(value: unknown): Coerced {
  if (!isObject(value)) return fail('must be a JSON object of strings');
  const bad = Object.entries(value).find(([, entry]) => typeof entry !== 'string');
  return bad ? fail(`must be a JSON object of strings ("${bad[0]}" is not a string)`) : ok(value);
}

/** POD_PORTS stays a string holding a JSON array of {name, containerPort, protocol}. */
function toPodPorts(value: unknown): Coerced {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const parsed = parseBoundedJson(text);
  const isPort = (port: unknown) =>
    isObject(port) &&
    Number.isInteger(port.containerPort) &&
    ['name', 'protocol'].every((field) => port[field] === undefined || typeof port[field] === 'string');
  if (!parsed.ok || !Array.isArray(parsed.value) || !parsed.value.every(isPort)) return fail('must be a JSON array of {name, containerPort, protocol}');
  return ok(text);
}

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((entry) => typeof entry === 'string');

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
