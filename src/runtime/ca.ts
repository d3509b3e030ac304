import type { CaSettings } from '../ca/ca-settings.ts';
import { startCa, type CaRuntime } from '../ca/start.ts';
import type { SdsRuntime } from '../sds/start.ts';
import type { SecretStore } from '../sds/secret-store.ts';
import { roomDeps, type RuntimeContext } from './context.ts';

/**
 * The CA client, when there are CA settings and a store that is ours to feed
 * (another process serving SDS feeds its own). `firstCallAfter`: see startCa.
 */
export async function startCaPart(
  ctx: RuntimeContext,
  options: { settings: CaSettings | undefined; store: SecretStore | undefined; firstCallAfter?: Promise<unknown> },
): Promise<CaRuntime | undefined> {
  const { settings, store } = options;
  if (!settings || !store) return undefined;
  return startCa({ settings, store, ...roomDeps(ctx, 'ca'), firstCallAfter: options.firstCallAfter });
}

/** /debug/sds shows the CA's side too: identity, serial, issuer, expiry, and why it fails. */
export const withCaDebug = (sds: SdsRuntime, ca: CaRuntime | undefined) => ({
  debug: () => (ca ? { ...(sds.debug() as object), ca: ca.debug() } : sds.debug()),
});
