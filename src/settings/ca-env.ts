import { parseDuration } from '../shared/duration.ts';
import { parseHostPort } from '../shared/host-port.ts';
import { badEnv } from '../shared/errors.ts';
import { istioRootCertPath } from '../shared/istio-files.ts';
import { declareEnvSettings } from './env-settings.ts';
import { bool } from './parse-values.ts';

const identityReason = 'must be set to ask the CA (CA_ADDR) for a certificate: the identity is spiffe://<trust domain>/ns/<POD_NAMESPACE>/sa/<SERVICE_ACCOUNT>';

/** The CA client's settings, under Istio's env names, one row each. */
export const caEnv = declareEnvSettings({
  address: {
    env: 'CA_ADDR',
    parse: (text) => checkHostPort(text),
    description:
      'host:port of the CA; unset: the discovery address, as Istio, when POD_NAMESPACE and SERVICE_ACCOUNT are both set (else no CA: certificates ' +
        'come from --certDir); port 15010 is plaintext, as Istio',
  },
  rootsPath: { env: 'CA_ROOT_CA', default: istioRootCertPath, description: "Root the CA's TLS certificate must chain to" },
  serverName: {
    env: 'ISTIOD_SAN',
    description:
      "Name the discovery server's TLS certificate must carry, and the CA's when CA_ADDR is unset (a CA_ADDR is checked against its own host, as " +
        "Istio); also --xdsServerName's env",
  },
  trustDomain: { env: 'TRUST_DOMAIN', default: 'cluster.local', description: 'Trust domain of the SPIFFE identity asked for' },
  namespace: { env: 'POD_NAMESPACE', required: identityReason, parse: (text) => pathSegment(text), description: 'Namespace of the SPIFFE identity' },
  serviceAccount: {
    env: 'SERVICE_ACCOUNT',
    required: identityReason,
    parse: (text) => pathSegment(text),
    description: 'Service account of the SPIFFE identity',
  },
  eccSignatureAlgorithm: {
    env: 'ECC_SIGNATURE_ALGORITHM',
    parse: (text) => istioEcc(text),
    description: 'ECDSA: an EC workload key (ECC_CURVE); unset: RSA (WORKLOAD_RSA_KEY_SIZE), as Istio',
  },
  eccCurve: { env: 'ECC_CURVE', default: 'P256', parse: (text) => eccCurve(text), description: 'Curve of an EC workload key: P256 or P384' },
  rsaKeySize: {
    env: 'WORKLOAD_RSA_KEY_SIZE',
    default: '2048',
    parse: (text) => rsaKeySize(text),
    description: "Bits of an RSA workload key: 2048 (Istio's minimum) to 8192",
  },
  keyAlgorithmOverride: {
    env: 'WORKLOAD_KEY_ALGORITHM',
    parse: (text) => keyAlgorithm(text),
    description: "This agent's own switch: ECDSA or RSA, whatever ECC_SIGNATURE_ALGORITHM says",
  },
  pkcs8Key: {
    env: 'PKCS8_KEY',
    default: 'false',
    parse: bool,
    description: 'true: the workload key in PKCS#8 (SDS, OUTPUT_CERTS); else SEC 1 (EC) or PKCS#1 (RSA), as Istio',
  },
  certSigner: { env: 'ISTIO_META_CERT_SIGNER', description: "Signer name sent with the CSR (metadata CertSigner), for istiod's per-signer CAs" },
  ttlSeconds: { env: 'SECRET_TTL', default: '24h', parse: (text) => minuteDurationSeconds(text), description: 'Lifetime asked of the CA, at least 1m' },
  graceRatio: { env: 'SECRET_GRACE_PERIOD_RATIO', default: '0.5', parse: (text) => ratio(text), description: 'Renew when this part of the lifetime is left' },
  jitterRatio: {
    env: 'SECRET_GRACE_PERIOD_RATIO_JITTER',
    default: '0.01',
    parse: (text) => ratio(text),
    description: 'Random spread of the renewal, so a fleet does not renew at once',
  },
  provCert: {
    env: 'PROV_CERT',
    description:
      "Pre-provisioned certificates (a VM's /etc/certs): the CA's and the discovery server's root is root-cert.pem there (unless CA_ROOT_CA, " +
        'XDS_ROOT_CA or --certDir has one), and its cert-chain.pem and key.pem, when there, go along to both, as Istio',
  },
  outputDir: {
    env: 'OUTPUT_CERTS',
    description: 'Also write the certificate and key here, for apps that read files (0600; 0644 with proxyless gRPC, as Istio on Kubernetes)',
  },
  clusterId: { env: 'ISTIO_META_CLUSTER_ID', alsoEnv: 'CLUSTER_ID', description: 'Cluster ID sent with the CSR' },
  fileMountedCerts: { env: 'FILE_MOUNTED_CERTS', default: 'false', parse: bool, description: 'true: certificates are mounted files, never asked of a CA' },
});

/**
 * CA_HEADER_<NAME>=<value>: extra metadata on every CA call, as Istio sends
 * it (lower-cased, as gRPC metadata is). A name gRPC or HTTP/2 reserves, or
 * one that is not a header token, is bad input naming the variable.
 */
export const caHeaderPrefix = 'CA_HEADER_';
const reservedHeaders = /^(authorization|clusterid|content-type|te|user-agent|host|connection|grpc-.*|:.*)$/;

export function caHeadersFromEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith(caHeaderPrefix) || value === undefined) continue;
    const name = variable.slice(caHeaderPrefix.length).toLowerCase();
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) throw badEnv(variable, `"${name}" is not a header name`);
    if (reservedHeaders.test(name)) throw badEnv(variable, `"${name}" is a header the CA call sets itself`);
    if (/[\r\n\0]/.test(value)) throw badEnv(variable, 'a header value cannot hold a line break or NUL');
    headers[name] = value;
  }
  return headers;
}

function checkHostPort(text: string): string {
  const parsed = parseHostPort(text);
  if (typeof parsed === 'string') throw new Error(parsed);
  return text;
}

function pathSegment(text: string): string {
  if (text.includes('/')) throw new Error(`"${text}" contains "/"`);
  return text;
}

/** Istio fails its CSR for any other value; here that is bad input at start instead. */
function istioEcc(text: string): 'ECDSA' {
  if (text !== 'ECDSA') throw new Error(`"${text}" is not ECDSA (the only algorithm Istio names there)`);
  return text;
}

function eccCurve(text: string): 'P256' | 'P384' {
  if (text === 'P256' || text === 'P384') return text;
  throw new Error(`"${text}" is not P256 or P384`);
}

function rsaKeySize(text: string): number {
  const bits = Number(text);
  if (!/^\d+$/.test(text) || bits < 2048 || bits > 8192) throw new Error(`"${text}" is not a key size from 2048 to 8192 bits`);
  return bits;
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
