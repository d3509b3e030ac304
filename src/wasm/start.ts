import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import type { wasmEnv } from '../settings/wasm-env.ts';
import type { EcdsConverter } from '../xds/relay/ecds-interceptor.ts';
import { convertEcdsResponse } from './ecds-response.ts';
import { moduleFetcher } from './fetch-module.ts';
import { ModuleCache } from './module-cache.ts';

export interface WasmLoader {
  convert: EcdsConverter;
  stop(): void;
}

/** The module cache and its purge timer, and the converter the relay hands ECDS responses to; undefined when switched off. */
export function startWasmLoader(settings: EnvValues<typeof wasmEnv>, options: { clock: Clock; logger: Logger }): WasmLoader | undefined {
  if (!settings.enabled) return undefined;
  const { clock, logger } = options;
  const fetch = moduleFetcher({ requestTimeoutMs: settings.requestTimeoutMs, maxRetries: settings.maxRetries, insecureRegistries: settings.insecureRegistries, clock, maxBytes: settings.maxBytes, blocked: settings.blockedCidrs });
  const cache = new ModuleCache({ dir: settings.cacheDir, expiryMs: settings.moduleExpiryMs, purgeIntervalMs: settings.purgeIntervalMs, clock, logger, fetch, maxBytes: settings.maxBytes });
  cache.start();
  return {
    convert: (message, mode) => convertEcdsResponse(message, { mode, cache, logger }),
    stop: () => cache.stop(),
  };
}
