import { caEnv, caHeadersFromEnv } from '../settings/ca-env.ts';
import { certFilesIn, istioTokenPath } from '../shared/istio-files.ts';
import { isEnvSet, readEnvSetting, readEnvSettings, type EnvValues } from '../settings/env-settings.ts';
import { parseHostPort, type HostPort } from '../shared/host-port.ts';
import type { WorkloadKeyOptions } from './csr.ts';

/**
 * The CA client's settings: its env rows as read (CA_ADDR, CA_ROOT_CA,
 * OUTPUT_CERTS…), plus what is made of several of them or of the flags.
 */
export type CaSettings = Omit<
  EnvValues<typeof caEnv>,
  'address' | 'namespace' | 'serviceAccount' | 'eccSignatureAlgorithm' | 'eccCurve' | 'rsaKeySize' | 'keyAlgorithmOverride' | 'fileMountedCerts'
> & {
  /** CA_ADDR, else the discovery address. */
  address: string;
  /** Istio speaks plaintext to a CA on 15010 (istiod's plaintext port, on a network secure by itself). */
  plaintext: boolean;
  /** The workload key: RSA (WORKLOAD_RSA_KEY_SIZE) unless ECC_SIGNATURE_ALGORITHM=ECDSA (ECC_CURVE). */
  key: WorkloadKeyOptions;
  /** OUTPUT_CERTS readable by the pod's other users (0644, as Istio on Kubernetes): proxyless gRPC, whose app reads them. */
  outputShared?: boolean;
  /** CA_HEADER_* as metadata on the CA call, names lower-cased. */
  headers: Record<string, string>;
  /** CA_ROOT_CA was set: the chain's root must then be in it even when the call is plaintext. */
  rootsExplicit: boolean;
  /** The host of CA_ADDR when set; else ISTIOD_SAN, else the discovery address's host. */
  serverName: string;
  tokenPath: string;
  /** spiffe://<TRUST_DOMAIN>/ns/<POD_NAMESPACE>/sa/<SERVICE_ACCOUNT> */
  identity: string;
};

export interface CaSettingsInput {
  env: NodeJS.ProcessEnv;
  /** The token file the relay uses (--xdsTokenFile), shared with the CA call. */
  tokenFile: string | undefined;
  /** True when --certDir holds a certificate: files win, as Istio's FILE_MOUNTED_CERTS. */
  certFilesMounted: boolean;
  /** The CA when CA_ADDR is unset, as Istio's agent defaults it. */
  discoveryAddress?: string;
}

/**
 * The CA client's settings from Istio's env names (the rows of
 * settings/ca-env.ts), or undefined when the agent does not ask a CA:
 * certificates mounted as files, or CA_ADDR unset and no identity to ask
 * for (POD_NAMESPACE and SERVICE_ACCOUNT not both set; Istio's template
 * always sets them). Only then are the other variables read; values that
 * are set but wrong are bad input, naming the variable.
 */
export function caSettingsFromEnv(input: CaSettingsInput): CaSettings | undefined {
  const { env } = input;
  // PROV_CERT's files only prove us to the CA (Istio refuses it beside FILE_MOUNTED_CERTS): files there are not a mounted identity.
  const mounted = input.certFilesMounted && !isEnvSet(env, caEnv.provCert);
  if (mounted || readEnvSetting(env, caEnv.fileMountedCerts)) return undefined;
  const explicit = isEnvSet(env, caEnv.address);
  if (!explicit && !(input.discoveryAddress && isEnvSet(env, caEnv.namespace) && isEnvSet(env, caEnv.serviceAccount))) return undefined;
  const { namespace, serviceAccount, eccSignatureAlgorithm, eccCurve, rsaKeySize, keyAlgorithmOverride, fileMountedCerts, address, ...values } =
    readEnvSettings(env, caEnv);
  const caAddress = address ?? input.discoveryAddress!;
  const rootsExplicit = isEnvSet(env, caEnv.rootsPath);
  const algorithm = keyAlgorithmOverride ?? (eccSignatureAlgorithm === 'ECDSA' ? 'ECDSA' : 'RSA');
  return {
    ...values,
    address: caAddress,
    plaintext: caAddress.endsWith(':15010'),
    key: algorithm === 'RSA' ? { algorithm, rsaBits: rsaKeySize } : { algorithm, curve: eccCurve },
    headers: caHeadersFromEnv(env),
    rootsExplicit,
    // As Istio's FindRootCAForCA: CA_ROOT_CA, else the provisioned root (a VM's), else istiod's published one.
    rootsPath: rootsExplicit || values.provCert === undefined ? values.rootsPath : certFilesIn(values.provCert).root,
    // As Istio's agent: ISTIOD_SAN names the CA only when it is the discovery
    // server (CA_ADDR unset); a CA_ADDR of its own (istio-csr, say) is
    // checked against its own host.
    serverName: explicit ? hostOf(caAddress) : (values.serverName ?? hostOf(caAddress)),
    tokenPath: input.tokenFile || istioTokenPath,
    identity: `spiffe://${values.trustDomain}/ns/${namespace}/sa/${serviceAccount}`,
  };
}

/** CA_ADDR passed its row's check, so it parses. */
const hostOf = (address: string) => (parseHostPort(address) as HostPort).host;
