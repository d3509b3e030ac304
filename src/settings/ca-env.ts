import { parseDuration } from '../shared/duration.ts';
import { parseHostPort } from '../shared/host-port.ts';
import { declareEnvSettings } from './env-settings.ts';

/** Istio's mounts for istiod's root (the CA's and the 15012 port's) and the projected service-account token. */
export const istioRootCertPath = '/var/run/secrets/istio/root-cert.pem';
export const istioTokenPath = '/var/run/secrets/tokens/istio-token';

const identityReason = 'must be set to ask the CA (CA_ADDR) for a certificate: the identity is spiffe://<trust domain>/ns/<POD_NAMESPACE>/sa/<SERVICE_ACCOUNT>';

/** The CA client's settings, under Istio's env names, one row each. */
export const caEnv = declareEnvSettings({
  address: { env: 'CA_ADDR', required: 'must be set to ask a CA', parse: (text) => checkHostPort(text), description: 'host:port of the CA; unset: no CA, certificates come from --certDir' },
  rootsPath: { env: 'CA_ROOT_CA', default: istioRootCertPath, description: 'Root the CA\'s TLS certificate must chain to' },
  serverName: { env: 'ISTIOD_SAN', description: 'Name the CA\'s TLS certificate must carry; the host of CA_ADDR when unset (also --xdsServerName\'s env)' },
  trustDomain: { env: 'TRUST_DOMAIN', default: 'cluster.local', description: 'Trust domain of the SPIFFE identity asked for' },
  namespace: { env: 'POD_NAMESPACE', required: identityReason, parse: (text) => pathSegment(text), description: 'Namespace of the SPIFFE identity' },
  serviceAccount: { env: 'SERVICE_ACCOUNT', required: identityReason, parse: (text) => pathSegment(text), description: 'Service account of the SPIFFE identity' },
  eccSignatureAlgorithm: { env: 'ECC_SIGNATURE_ALGORITHM', parse: (text) => istioEcc(text), description: 'Istio\'s way to ask for an EC key: ECDSA, the default here anyway' },
  keyAlgorithm: { env: 'WORKLOAD_KEY_ALGORITHM', default: 'ECDSA', parse: (text) => keyAlgorithm(text), description: 'Key of the workload certificate: ECDSA (P-256) or RSA (2048)' },
  ttlSeconds: { env: 'SECRET_TTL', default: '24h', parse: (text) => minuteDurationSeconds(text), description: 'Lifetime asked of the CA, at least 1m' },
  graceRatio: { env: 'SECRET_GRACE_PERIOD_RATIO', default: '0.5', parse: (text) => ratio(text), description: 'Renew when this part of the lifetime is left' },
  jitterRatio: { env: 'SECRET_GRACE_PERIOD_RATIO_JITTER', default: '0.01', parse: (text) => ratio(text), description: 'Random spread of the renewal, so a fleet does not renew at once' },
  outputDir: { env: 'OUTPUT_CERTS', description: 'Also write the certificate and key here (0600), for apps that read files' },
  clusterId: { env: 'ISTIO_META_CLUSTER_ID', alsoEnv: 'CLUSTER_ID', description: 'Cluster ID sent with the CSR' },
  fileMountedCerts: { env: 'FILE_MOUNTED_CERTS', default: 'false', parse: (text) => /^true$/i.test(text), description: 'true: certificates are mounted files, never asked of a CA' },
});

function checkHostPort(text: string): string {
  const parsed = parseHostPort(text);
  if (typeof parsed === 'string') throw new Error(parsed);
  return text;
}

function pathSegment(text: string): string {
  if (text.includes('/')) throw new Error(`"${text}" contains "/"`);
  return text;
}

/** Ours defaults to ECDSA; Istio's ECC_SIGNATURE_ALGORITHM=ECDSA (its way to ask for EC) is accepted and means the same. */
function istioEcc(text: string): 'ECDSA' {
  if (text !== 'ECDSA') throw new Error(`"${text}" is not ECDSA (the only algorithm Istio names there)`);
  return text;
}

function keyAlgorithm(text: string): 'ECDSA' | 'RSA' {
  if (text === 'ECDSA' || text === 'RSA') return text;
  throw new Error(`"${text}" is not ECDSA or RSA`);
}

function minuteDurationSeconds(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < 60_000) throw new Error(`"${text}" is not a Go duration of at least 1m`);
  return Math.floor(ms / 1000);
}

function ratio(text: string): number {
  const value = Number(text);
  if (!/^\d*\.?\d+$/.test(text) || value > 1) throw new Error(`"${text}" is not a number between 0 and 1`);
  return value;
}
