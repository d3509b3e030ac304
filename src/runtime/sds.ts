import { startSds, type SdsRuntime } from '../sds/start.ts';
import { stopsOnDispose, type RuntimeContext } from './context.ts';

export type SdsPart = SdsRuntime & AsyncDisposable;

/** The SDS server on --sdsSocket (or the note that another process serves it). */
export async function startSdsPart(ctx: RuntimeContext): Promise<SdsPart> {
  const sds = await startSds({ config: ctx.config, registry: ctx.registry, clock: ctx.clock, logger: ctx.logger.child({ component: 'sds' }) });
  return stopsOnDispose(sds, () => sds.stop());
}
