import { join } from 'node:path';
import { parseDuration } from '../shared/duration.ts';
import { badEnv } from '../shared/errors.ts';
import { parseHostPort } from '../shared/host-port.ts';
import type { KeyAlgorithm } from './csr.ts';

/** Istio's mounts for istiod's root (the CA's and the 15012 port's) and the projected service-account token. */
export const istioRootCertPath = '/var/run/secrets/istio/root-cert.pem';
export const istioTokenPath = '/var/run/secrets/tokens/istio-token';

export interface CaSettings {
  /** host:port of the CA: CA_ADDR. */
  address: string;
  /** The CA's TLS root (CA_ROOT_CA, else Istio's mounted root) and the name its certificate must carry. */
  rootsPath: string;
  serverName: string;
  tokenPath: string;
  identity: string;
  trustDomain: string;
  keyAlgorithm: KeyAlgorithm;
  ttlSeconds: number;
  graceRatio: number;
  jitterRatio: number;
  /** OUTPUT_CERTS: also write the certificate and key here (0600), for apps that read files. */
  outputDir: string | undefined;
  clusterId: string | undefined;
}

export interface CaSettingsInput {
  env: NodeJS.ProcessEnv;
  /** The token file the relay uses (--xdsTokenFile), shared with the CA call. */
  tokenFile: string | undefined;
  /** True when --certDir holds a certificate: files win, as Istio's FILE_MOUNTED_CERTS. */
  certFilesMounted: boolean;
}

/**
 * The CA client's settings from Istio's env names, or undefined when the
 * agent does not ask a CA: CA_ADDR unset, or certificates mounted as files.
 * Values that are set but wrong are bad input, naming the variable.
 */
export function caSettingsFromEnv(input: CaSettingsInput): CaSettings | undefined {
  const { env } = input;
  if (!env.CA_ADDR || input.certFilesMounted || /^true$/i.test(env.FILE_MOUNTED_CERTS ?? '')) return undefined;
  const address = parseHostPort(env.CA_ADDR);
  if (typeof address === 'string') fail('CA_ADDR', address);
  const trustDomain = env.TRUST_DOMAIN || 'cluster.local';
  return {
    address: env.CA_ADDR,
    rootsPath: env.CA_ROOT_CA || istioRootCertPath,
    serverName: env.ISTIOD_SAN || address.host,
    tokenPath: input.tokenFile || istioTokenPath,
    identity: `spiffe://${trustDomain}/ns/${required(env, 'POD_NAMESPACE')}/sa/${required(env, 'SERVICE_ACCOUNT')}`,
    trustDomain,
    keyAlgorithm: keyAlgorithm(env.WORKLOAD_KEY_ALGORITHM, env.ECC_SIGNATURE_ALGORITHM),
    ttlSeconds: seconds('SECRET_TTL', env.SECRET_TTL, 24 * 3600),
    graceRatio: ratio('SECRET_GRACE_PERIOD_RATIO', env.SECRET_GRACE_PERIOD_RATIO, 0.5),
    jitterRatio: ratio('SECRET_GRACE_PERIOD_RATIO_JITTER', env.SECRET_GRACE_PERIOD_RATIO_JITTER, 0.01),
    outputDir: env.OUTPUT_CERTS || undefined,
    clusterId: env.ISTIO_META_CLUSTER_ID || env.CLUSTER_ID || undefined,
  };
}

/** The files OUTPUT_CERTS gets, under Istio's names. */
export const outputFiles = (dir: string) => ({ chain: join(dir, 'cert-chain.pem'), key: join(dir, 'key.pem'), root: join(dir, 'root-cert.pem') });

function fail(name: string, reason: string): never {
  throw badEnv(name, reason);
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) fail(name, 'must be set to ask the CA (CA_ADDR) for a certificate: the identity is spiffe://<trust domain>/ns/<POD_NAMESPACE>/sa/<SERVICE_ACCOUNT>');
  if (value.includes('/')) fail(name, `"${value}" contains "/"`);
  return value;
}

/** Ours defaults to ECDSA; Istio's ECC_SIGNATURE_ALGORITHM=ECDSA (its way to ask for EC) is accepted and means the same. */
function keyAlgorithm(text: string | undefined, istioEcc: string | undefined): KeyAlgorithm {
  if (istioEcc && istioEcc !== 'ECDSA') fail('ECC_SIGNATURE_ALGORITHM', `"${istioEcc}" is not ECDSA (the only algorithm Istio names there)`);
  if (text === undefined || text === '' || text === 'ECDSA') return 'ECDSA';
  if (text === 'RSA') return 'RSA';
  return fail('WORKLOAD_KEY_ALGORITHM', `"${text}" is not ECDSA or RSA`);
}

function seconds(name: string, text: string | undefined, fallback: number): number {
  if (!text) return fallback;
  const ms = parseDuration(text);
  if (ms === undefined || ms < 60_000) fail(name, `"${text}" is not a Go duration of at least 1m`);
  return Math.floor(ms / 1000);
}

function ratio(name: string, text: string | undefined, fallback: number): number {
  if (!text) return fallback;
  const value = Number(text);
  if (!/^\d*\.?\d+$/.test(text) || value > 1) fail(name, `"${text}" is not a number between 0 and 1`);
  return value;
}
