import type { KeyObject } from 'node:crypto';
import type { CaSettings } from '../ca/ca-settings.ts';
import type { EnvoyLaunch } from '../envoy/args.ts';
import type { NodeMetadata } from '../role/metadata.ts';
import type { EnvValues } from '../settings/env-settings.ts';
import type { wasmEnv } from '../settings/wasm-env.ts';
import type { StartStatusOptions } from '../status/status.ts';
import type { XdsRelayOptions } from '../xds/relay/relay.ts';
import type { DnsInputs } from './dns.ts';
import type { LoopProxy } from './envoy-loop.ts';
import type { ProcessHooks } from './process-hooks.ts';

/** What the sidecar runtime (envoy-recipe.ts, beside-envoy.ts) starts from, once the bootstrap is rendered. */
export interface EnvoyRecipeInputs {
  bootstrap: { nodeId: string; metadata: NodeMetadata; text: string; domain: string; renderSotw?: () => Promise<string> };
  launch: EnvoyLaunch;
  /** Envoy reaches the relay (xds) and the status server's readiness (readiness) on these sockets. */
  sockets: { xds: string; readiness: string };
  /** Where and how the relay reaches the discovery server. */
  upstream: XdsRelayOptions['upstream'];
  caSettings: CaSettings | undefined;
  /** The CA client's first key, made since the agent's exec (workloadKeyAhead). */
  caFirstKey?: Promise<KeyObject>;
  app: StartStatusOptions['app'];
  grpcBootstrapPath: string | undefined;
  dns: DnsInputs;
  wasm: EnvValues<typeof wasmEnv>;
  guard: ProcessHooks;
  /** Tests: the proxy the loop runs instead of Envoy. */
  proxy?: LoopProxy;
}
