import type { Clock } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import type { wasmEnv } from '../settings/wasm-env.ts';
import type { EcdsConverter } from '../discovery/consumers.ts';
import { convertEcdsResponse } from './ecds-response.ts';
import { moduleFetcher } from './fetch-module.ts';
import { registerWasmMetrics } from './metrics.ts';
import { ModuleCache } from './module-cache.ts';
import type { Registry } from '../metrics/index.ts';

/** Disposing it stops it: a recipe's stack takes it as it is. */
export interface WasmLoader extends AsyncDisposable {
  convert: EcdsConverter;
  stop(): void;
}

/** The module cache and its purge timer, and the converter the relay hands ECDS responses to; undefined when switched off. */
export function startWasmLoader(settings: EnvValues<typeof wasmEnv>, options: { clock: Clock; logger: Logger; registry?: Registry }): WasmLoader | undefined {
  if (!settings.enabled) return undefined;
  const { clock, logger } = options;
  let cacheRef: ModuleCache | undefined;
  const metrics = options.registry && registerWasmMetrics(options.registry, () => cacheRef?.size ?? 0);
  const fetch = moduleFetcher({
    requestTimeoutMs: settings.requestTimeoutMs,
    maxRetries: settings.maxRetries,
    insecureRegistries: settings.insecureRegistries,
    clock,
    maxBytes: settings.maxBytes,
    blocked: settings.blockedCidrs,
  });
  const cache = new ModuleCache({
    dir: settings.cacheDir,
    expiryMs: settings.moduleExpiryMs,
    purgeIntervalMs: settings.purgeIntervalMs,
    clock,
    logger,
    fetch,
    maxBytes: settings.maxBytes,
    metrics,
  });
  cacheRef = cache;
  cache.start();
  return {
    convert: (message, mode) => convertEcdsResponse(message, { mode, cache, logger, metrics }),
    stop: () => cache.stop(),
    [Symbol.asyncDispose]: async () => cache.stop(),
  };
}
