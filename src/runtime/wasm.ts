import type { EnvValues } from '../settings/env-settings.ts';
import type { wasmEnv } from '../settings/wasm-env.ts';
import { startWasmLoader, type WasmLoader } from '../wasm/start.ts';
import { stopsOnDispose, type RuntimeContext } from './context.ts';

/** The Wasm module loader the relay hands ECDS responses to; undefined when switched off. */
export function startWasmPart(ctx: RuntimeContext, settings: EnvValues<typeof wasmEnv>): (WasmLoader & AsyncDisposable) | undefined {
  const wasm = startWasmLoader(settings, { clock: ctx.clock, logger: ctx.logger.child({ component: 'wasm' }), registry: ctx.registry });
  return wasm && stopsOnDispose(wasm, () => wasm.stop());
}
