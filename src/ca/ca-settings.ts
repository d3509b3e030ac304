import { join } from 'node:path';
import { caEnv, istioTokenPath } from '../settings/ca-env.ts';
import { isEnvSet, readEnvSetting, readEnvSettings, type EnvValues } from '../settings/env-settings.ts';
import { parseHostPort } from '../shared/host-port.ts';
import type { HostPort } from '../shared/proxy-config.ts';

/**
 * The CA client's settings: its env rows as read (CA_ADDR, CA_ROOT_CA,
 * OUTPUT_CERTS…), plus what is made of several of them or of the flags.
 */
export type CaSettings = Omit<EnvValues<typeof caEnv>, 'namespace' | 'serviceAccount' | 'eccSignatureAlgorithm' | 'fileMountedCerts'> & {
  /** ISTIOD_SAN, else the host of CA_ADDR. */
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
}

/**
 * The CA client's settings from Istio's env names (the rows of
 * settings/ca-env.ts), or undefined when the agent does not ask a CA:
 * CA_ADDR unset, or certificates mounted as files. Only then are the other
 * variables read; values that are set but wrong are bad input, naming the variable.
 */
export function caSettingsFromEnv(input: CaSettingsInput): CaSettings | undefined {
  const { env } = input;
  if (!isEnvSet(env, caEnv.address) || input.certFilesMounted || readEnvSetting(env, caEnv.fileMountedCerts)) return undefined;
  const { namespace, serviceAccount, eccSignatureAlgorithm, fileMountedCerts, ...values } = readEnvSettings(env, caEnv);
  return {
    ...values,
    serverName: values.serverName ?? hostOf(values.address),
    tokenPath: input.tokenFile || istioTokenPath,
    identity: `spiffe://${values.trustDomain}/ns/${namespace}/sa/${serviceAccount}`,
  };
}

/** CA_ADDR passed its row's check, so it parses. */
const hostOf = (address: string) => (parseHostPort(address) as HostPort).host;

/** The files OUTPUT_CERTS gets, under Istio's names. */
export const outputFiles = (dir: string) => ({ chain: join(dir, 'cert-chain.pem'), key: join(dir, 'key.pem'), root: join(dir, 'root-cert.pem') });
