/**
 * The JSON types of ProxyConfig's top-level fields (istio.mesh.v1alpha1,
 * mesh/v1alpha1/proxy.proto), as protojson reads them: istiod unmarshals
 * PROXY_CONFIG from the node metadata and refuses the node on a mismatch.
 * Unknown fields are allowed, as istiod allows them.
 */
type FieldKind = 'string' | 'int' | 'duration' | 'boolValue' | 'int32Value' | 'stringMap' | 'stringArray' | 'enum' | 'object';

const fieldsByKind: Record<FieldKind, readonly string[]> = {
  string: [
    'configPath',
    'binaryPath',
    'serviceCluster',
    'discoveryAddress',
    'zipkinAddress',
    'statsdUdpAddress',
    'envoyMetricsServiceAddress',
    'availabilityZone',
    'customConfigFile',
    'proxyBootstrapTemplatePath',
    'meshId',
  ],
  int: ['proxyAdminPort', 'statNameLength', 'statusPort', 'fileFlushMinSizeKb'],
  duration: ['drainDuration', 'discoveryRefreshDelay', 'terminationDrainDuration', 'fileFlushInterval', 'parentShutdownDuration'],
  boolValue: ['holdApplicationUntilProxyStarts', 'statsCompression'],
  int32Value: ['concurrency'],
  stringMap: ['proxyMetadata', 'runtimeValues'],
  stringArray: ['extraStatTags', 'caCertificatesPem'],
  enum: ['controlPlaneAuthPolicy', 'interceptionMode', 'tracingServiceName'],
  object: [
    'tracing',
    'sds',
    'envoyAccessLogService',
    'envoyMetricsService',
    'gatewayTopology',
    'readinessProbe',
    'proxyStatsMatcher',
    'image',
    'privateKeyProvider',
    'proxyHeaders',
    'connectionSettings',
  ],
};

const fieldKinds = new Map<string, FieldKind>(
  Object.entries(fieldsByKind).flatMap(([kind, fields]) => fields.map((field) => [field, kind as FieldKind] as const)),
);

/** protojson accepts the proto name (snake_case) as well as the JSON name: the JSON name of either. */
export const camel = (name: string) => name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());

const isInteger = (value: unknown) => (typeof value === 'number' && Number.isInteger(value)) || (typeof value === 'string' && /^-?\d+$/.test(value));
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const accepts: Record<FieldKind, { test: (value: unknown) => boolean; expected: string }> = {
  string: { test: (value) => typeof value === 'string', expected: 'a string' },
  int: { test: isInteger, expected: 'an integer' },
  int32Value: { test: isInteger, expected: 'an integer' },
  duration: { test: (value) => typeof value === 'string' && /^-?\d+(\.\d{1,9})?s$/.test(value), expected: 'a duration in seconds such as "5s"' },
  boolValue: { test: (value) => typeof value === 'boolean', expected: 'true or false' },
  stringMap: { test: (value) => isObject(value) && Object.values(value).every((entry) => typeof entry === 'string'), expected: 'an object of strings' },
  stringArray: { test: (value) => Array.isArray(value) && value.every((entry) => typeof entry === 'string'), expected: 'an array of strings' },
  enum: { test: (value) => typeof value === 'string' || isInteger(value), expected: 'an enum name' },
  object: { test: isObject, expected: 'an object' },
};

/** True for a field ProxyConfig declares (JSON or proto name); others are warned about and ignored. */
export const isProxyConfigField = (name: string) => fieldKinds.has(camel(name));

/** The first problem with a ProxyConfig value, naming the field; undefined when istiod would take it. */
export function checkProxyConfig(value: unknown): string | undefined {
  if (!isObject(value)) return 'must be a JSON object (a ProxyConfig)';
  for (const [name, field] of Object.entries(value)) {
    const kind = fieldKinds.get(camel(name));
    // protojson reads null as "unset" for every field.
    if (kind === undefined || field === null || accepts[kind].test(field)) continue;
    return `field ${name} must be ${accepts[kind].expected}, not ${JSON.stringify(field)}`;
  }
  return undefined;
}
