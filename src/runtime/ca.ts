import type { CaSettings } from '../ca/ca-settings.ts';
import { startCa, type CaRuntime, type StartCaOptions } from '../ca/start.ts';
import type { SdsRuntime } from '../sds/start.ts';
import { roomDeps, type RuntimeContext } from './context.ts';

/**
 * The CA client, when there are CA settings and someone to hand its
 * certificates to (another process serving SDS gets its own). `firstCallAfter`: see startCa.
 */
export async function startCaPart(
  ctx: RuntimeContext,
  options: { settings: CaSettings | undefined; onIssued: StartCaOptions['onIssued'] | undefined; firstCallAfter?: Promise<unknown> },
): Promise<CaRuntime | undefined> {
  const { settings, onIssued } = options;
  if (!settings || !onIssued) return undefined;
  return startCa({ settings, onIssued, ...roomDeps(ctx, 'ca'), firstCallAfter: options.firstCallAfter });
}

/** /debug/sds shows the CA's side too: identity, serial, issuer, expiry, and why it fails. */
export const withCaDebug = (sds: SdsRuntime, ca: CaRuntime | undefined) => ({
  debug: () => (ca ? { ...(sds.debug() as object), ca: ca.debug() } : sds.debug()),
});
