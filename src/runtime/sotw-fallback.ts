import type { Agent } from '../agent/agent.ts';
import type { XdsMode } from '../discovery/wire.ts';
import type { Clock, Timer } from '../shared/clock.ts';
import type { Logger } from '../shared/log.ts';
import type { XdsRelay } from '../xds/relay/relay.ts';
import type { LoopProxy, RequestEpoch, XdsChoice } from './envoy-loop.ts';

/** The first switch (to SotW) goes at once; each later one waits this long, doubled each time, up to `maxSwitchDelayMs`. */
export const switchDelayMs = 1000;
export const maxSwitchDelayMs = 5 * 60_000;

const sotwMark = '+sotw';
const names: Record<XdsMode, string> = { delta: 'Delta xDS', sotw: 'State of the World xDS' };

/**
 * Delta xDS is the default, as Istio's since 1.22. A discovery server without
 * it (Istio 1.1's Pilot) answers the Delta call UNIMPLEMENTED: then the next
 * epoch gets a SotW bootstrap (a hot restart, validated before it takes
 * over, as every one; an epoch still starting is replaced) and the agent
 * stays on SotW. Should SotW be answered UNIMPLEMENTED too (the server behind
 * the address changed, or it has Delta only), the agent goes back to Delta
 * the same way, after 1 s, then 2 s, 4 s … at most 5 min between switches:
 * an Envoy never waits for ever on a flavour the server said it lacks, and a
 * server with neither costs one restart per wait. Returns the undo.
 */
export function fallBackToSotw(parts: {
  relay: Pick<XdsRelay, 'onUnimplemented'>;
  agent: Pick<Agent, 'state'>;
  /** The loop's one way to a new epoch (the same certificate files, under the new flavour's mark). */
  requestEpoch: RequestEpoch;
  proxy: LoopProxy;
  xds: XdsChoice;
  /** The Delta bootstrap Envoy started with, and how to render the SotW one. */
  bootstraps: { delta: string; sotw: () => Promise<string> } | undefined;
  clock: Clock;
  logger: Logger;
}): Disposable {
  const { relay, proxy, xds, bootstraps, clock, logger } = parts;
  const none = { [Symbol.dispose]: () => undefined };
  if (xds.mode !== 'delta' || !bootstraps || !proxy.useBootstrap) return none;
  let switches = 0;
  let timer: Timer | undefined;
  let pending = false;
  const stop = relay.onUnimplemented((mode) => {
    // A late stream of the flavour already left, or a switch under way.
    if (mode !== xds.mode || pending) return;
    const next: XdsMode = mode === 'delta' ? 'sotw' : 'delta';
    const delayMs = switches === 0 ? 0 : Math.min(switchDelayMs * 2 ** (switches - 1), maxSwitchDelayMs);
    switches++;
    pending = true;
    logger.info({ delayMs }, `the discovery server does not implement ${names[mode]} (UNIMPLEMENTED): restarting Envoy with ${names[next]}`);
    const go = () => void switchTo(parts, next, bootstraps).finally(() => (pending = false));
    if (delayMs === 0) return go();
    timer = clock.setTimeout(go, delayMs);
  });
  return { [Symbol.dispose]: () => (stop(), timer?.cancel()) };
}

/** The next epoch runs `next`: its bootstrap, the config's mark, and (with certificates) a config the loop starts. */
async function switchTo(parts: Parameters<typeof fallBackToSotw>[0], next: XdsMode, bootstraps: { delta: string; sotw: () => Promise<string> }) {
  const { agent, requestEpoch, proxy, xds, logger } = parts;
  const text = await Promise.resolve().then(() => (next === 'sotw' ? bootstraps.sotw() : bootstraps.delta)).catch((err: unknown) => {
    logger.error({ err }, `cannot render the ${names[next]} bootstrap; staying on ${names[xds.mode]}`);
  });
  if (text === undefined) return;
  proxy.useBootstrap?.(text);
  xds.mode = next;
  // A config of its own, so the loop starts the next epoch; later certificate changes keep the mark.
  xds.configSuffix = next === 'sotw' ? sotwMark : '';
  const desired = agent.state.desired;
  if (desired === undefined) return;
  const files = desired.endsWith(sotwMark) ? desired.slice(0, -sotwMark.length) : desired;
  // An epoch still starting (waiting on a flavour it will never get) has nothing to hand over: replaced, not waited for.
  requestEpoch(files, { replaceStarting: true });
}
