import type { CaRuntime } from '../ca/start.ts';
import { loadLastKnownGoodConfig } from '../xds/last-known-good/file.ts';
import { XdsRelay, type XdsRelayOptions } from '../xds/relay/relay.ts';
import { stopsOnDispose, type RuntimeContext } from './context.ts';

export interface RelayInputs {
  socketPath: string;
  /** The proxyless app, not Envoy, dials the socket and may run as any user: 0666 as Istio's. */
  socketMode?: number;
  upstream: XdsRelayOptions['upstream'];
  node: string;
  ca: CaRuntime | undefined;
  nameTables?: XdsRelayOptions['nameTables'];
  ecds?: XdsRelayOptions['ecds'];
  health?: XdsRelayOptions['health'];
}

export type RelayPart = XdsRelay & AsyncDisposable;

/**
 * The xDS relay with the last-known-good config it serves from. Listening
 * before Envoy starts: Envoy's first ADS connect then succeeds at once.
 * Disposing it stops the relay, then writes and closes the last-known-good file:
 * one stack, as the recipes', which also closes the file when the relay cannot start.
 */
export async function startRelayPart(ctx: RuntimeContext, inputs: RelayInputs): Promise<RelayPart> {
  const logger = ctx.logger.child({ component: 'xds' });
  const { lastKnownGood, lastKnownGoodFile } = await loadLastKnownGoodConfig({
    configPath: ctx.config.configPath,
    node: inputs.node,
    clock: ctx.clock,
    logger,
  });
  await using stack = new AsyncDisposableStack();
  // Undone last: the file gets what the relay kept up to its stop.
  stack.defer(() => lastKnownGoodFile.close());
  const { ca } = inputs;
  // Once the CA has issued one, new connections to istiod present the workload certificate too (never waited for).
  const upstream = { ...inputs.upstream, heldCertificate: ca && (() => ca.workloadCertificate()) };
  const relay = new XdsRelay({
    socketPath: inputs.socketPath,
    socketMode: inputs.socketMode,
    upstream,
    registry: ctx.registry,
    clock: ctx.clock,
    logger,
    lastKnownGood,
    nameTables: inputs.nameTables,
    ecds: inputs.ecds,
    health: inputs.health,
  });
  await relay.start();
  stack.defer(() => relay.stop());
  const stops = stack.move();
  return stopsOnDispose(relay, () => stops.disposeAsync());
}
