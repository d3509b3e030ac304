import { access } from 'node:fs/promises';
import { formatHostPort } from '../shared/host-port.ts';
import { certFilesIn } from '../shared/istio-files.ts';
import type { AgentConfig } from '../settings/proxy-settings.ts';
import { caSettingsFromEnv, type CaSettings } from './ca-settings.ts';

/**
 * Whether this agent asks a CA for its identity, decided once at start:
 * CA_ADDR set (else the discovery address) and no certificate mounted in --certDir (mounted files win,
 * as with Istio's FILE_MOUNTED_CERTS). Wrong CA env is bad input (exit 2).
 */
export async function resolveCaSettings(config: AgentConfig, env: NodeJS.ProcessEnv): Promise<CaSettings | undefined> {
  const certFilesMounted = await access(certFilesIn(config.certDir).chain).then(() => true, () => false);
  return caSettingsFromEnv({ env, tokenFile: config.xdsTokenFile, certFilesMounted, discoveryAddress: formatHostPort(config.discoveryAddress) });
}
