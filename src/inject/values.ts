import { parseYaml } from './yaml.ts';
import { badFile, badFlag } from '../shared/errors.ts';
import { parseCidrSelection, parseOwnerId, parsePort, parsePortList, parsePortSelection } from '../iptables/ports.ts';
import { blame } from './blame.ts';
import { isMapping, type InjectValues } from './types.ts';

type Kind = 'string' | 'integer' | 'boolean' | 'mapping' | 'stringMap';

const kinds: Record<keyof InjectValues, Kind> = {
  image: 'string',
  imagePullPolicy: 'string',
  discoveryAddress: 'string',
  controlPlaneAuthPolicy: 'string',
  proxyLogLevel: 'string',
  proxyComponentLogLevel: 'string',
  agentLogLevel: 'string',
  statusPort: 'integer',
  concurrency: 'integer',
  terminationDrainDurationSeconds: 'integer',
  holdApplicationUntilProxyStarts: 'boolean',
  kubernetesVersion: 'string',
  rewriteAppHTTPProbers: 'boolean',
  prometheusMerge: 'boolean',
  clusterDomain: 'string',
  clusterId: 'string',
  meshId: 'string',
  trustDomain: 'string',
  caAddress: 'string',
  pilotCertProvider: 'string',
  tokenAudience: 'string',
  rootCertConfigMap: 'string',
  proxyUID: 'integer',
  proxyGID: 'integer',
  interceptionMode: 'string',
  nativeNftables: 'boolean',
  outboundCapturePort: 'integer',
  inboundCapturePort: 'integer',
  includeInboundPorts: 'string',
  excludeInboundPorts: 'string',
  includeOutboundIPRanges: 'string',
  excludeOutboundIPRanges: 'string',
  resources: 'mapping',
  proxyMetadata: 'stringMap',
};

/**
 * Reads a values file over `base` (the defaults). Without a base every key
 * is required: that is how the defaults file itself is read.
 */
export function parseValues(text: string, source: string, base?: InjectValues): InjectValues {
  const raw = parseYaml(text, source) ?? {};
  if (!isMapping(raw)) throw badFile(source, 'values must be a YAML mapping');
  for (const [key, value] of Object.entries(raw)) checkKind(source, key, value);
  const merged = { ...base, ...raw } as InjectValues;
  const missing = Object.keys(kinds).find((key) => !(key in merged));
  if (missing !== undefined) throw badFile(source, `${missing}: missing`);
  blame(source, 'values', () => checkValues(merged));
  return merged;
}

function checkKind(source: string, key: string, value: unknown): void {
  const kind = kinds[key as keyof InjectValues];
  if (kind === undefined) throw badFile(source, `${key}: unknown key`);
  if (!hasKind(kind, value)) throw badFile(source, `${key}: must be ${kindNames[kind]}`);
}

const kindNames: Record<Kind, string> = {
  string: 'a string',
  integer: 'an integer',
  boolean: 'true or false',
  mapping: 'a mapping',
  stringMap: 'a mapping of strings',
};

function hasKind(kind: Kind, value: unknown): boolean {
  switch (kind) {
    case 'string': return typeof value === 'string';
    case 'integer': return Number.isSafeInteger(value);
    case 'boolean': return typeof value === 'boolean';
    case 'mapping': return isMapping(value);
    case 'stringMap': return isMapping(value) && Object.values(value).every((item) => typeof item === 'string');
  }
}

/** The checks `istio-iptables` would make, done now so the pod never crash-loops on them. */
function checkValues(values: InjectValues): void {
  if (values.image.trim() === '') throw badFlag('image', 'must not be empty');
  if (!/^\S+:\d+$/.test(values.discoveryAddress)) throw badFlag('discoveryAddress', 'must be host:port');
  if (values.interceptionMode !== 'REDIRECT') throw badFlag('interceptionMode', 'only REDIRECT is supported');
  if (values.concurrency < 0) throw badFlag('concurrency', 'must be 0 or more');
  if (!/^\d+\.\d+(\.\d+)?$/.test(values.kubernetesVersion)) throw badFlag('kubernetesVersion', 'must be "major.minor", e.g. "1.29"');
  if (values.terminationDrainDurationSeconds < 0) throw badFlag('terminationDrainDurationSeconds', 'must be 0 or more');
  parsePort('statusPort', String(values.statusPort));
  parsePort('outboundCapturePort', String(values.outboundCapturePort));
  parsePort('inboundCapturePort', String(values.inboundCapturePort));
  parseOwnerId('proxyUID', String(values.proxyUID));
  parseOwnerId('proxyGID', String(values.proxyGID));
  parsePortSelection('includeInboundPorts', values.includeInboundPorts);
  parsePortList('excludeInboundPorts', values.excludeInboundPorts);
  parseCidrSelection('includeOutboundIPRanges', values.includeOutboundIPRanges);
  parseCidrSelection('excludeOutboundIPRanges', values.excludeOutboundIPRanges);
  for (const name of Object.keys(values.proxyMetadata)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw badFlag(`proxyMetadata.${name}`, 'must be a valid env var name');
  }
}
