import type { FileRead } from '../watch/cert-set.ts';
import { startCertWatch } from '../watch/start.ts';
import { stopsOnDispose, type RuntimeContext } from './context.ts';

/** The certificate dir watch: every consistent set goes to `feed` (the first one right away). */
export async function startCertsPart(
  ctx: RuntimeContext,
  options: { caInUse: boolean; feed: (hash: string, files: readonly FileRead[]) => void },
): Promise<AsyncDisposable> {
  const watch = await startCertWatch(
    ctx.config,
    { clock: ctx.clock, logger: ctx.logger.child({ component: 'certs' }), caInUse: options.caInUse },
    options.feed,
  );
  return stopsOnDispose(watch, () => watch.close());
}
