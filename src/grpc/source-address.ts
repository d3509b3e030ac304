import type { ChannelOptions, experimental } from '@grpc/grpc-js';
import { formatHostPort } from '../shared/host-port.ts';
import type { GrpcModule } from './load.ts';

/** The target scheme whose channels connect from a chosen local address. */
const scheme = 'pilot-agent-from';

/**
 * The channel target for `host:port`, every connection of the channel made
 * from `localAddress` (e.g. 127.0.0.6). Give the channel
 * `sourceBoundChannelOptions` too. The resolver must be registered
 * (`registerSourceAddressResolver`) before the channel is made.
 */
export function sourceBoundTarget(options: { host: string; port: number; localAddress: string }): string {
  return `${scheme}:${options.localAddress}/${formatHostPort(options)}`;
}

/**
 * A channel of its own subchannels: a probe's connection is never one another
 * channel opened or reuses, and it goes when the channel is closed.
 */
export const sourceBoundChannelOptions: ChannelOptions = { 'grpc.use_local_subchannel_pool': 1 };

const registered = new WeakSet<GrpcModule>();

/**
 * Teaches grpc-js the `pilot-agent-from:` scheme: resolution yields the one
 * address in the target, carrying `localAddress`.
 *
 * Why a resolver: grpc-js 1.14 has no channel option for the local address
 * (grpc-java's LocalSocketPicker, tonic's local_address have no counterpart),
 * and its transport opens each connection with `net.connect(address)`, the
 * subchannel address the resolver produced, unchanged: a `localAddress`
 * there is bound by node:net. `experimental.registerResolver` is the
 * extension point grpc-js exports for producing those addresses, so this
 * needs no patching of grpc-js, and a channel on any other target is
 * untouched. The other ways considered: custom channel credentials
 * (`_createSecureConnector`) only see a socket already connected from the
 * wrong address; replacing `Http2SubchannelConnector.tcpConnect` would patch
 * grpc-js' internals for every channel. app-probes/grpc-health.test.ts
 * fails if a grpc-js upgrade stops passing the field through.
 */
export function registerSourceAddressResolver(grpc: GrpcModule): void {
  if (registered.has(grpc)) return;
  registered.add(grpc);
  grpc.experimental.registerResolver(scheme, resolverClass(grpc.experimental, grpc.status.UNAVAILABLE));
}

/** `localAddress/host:port` of a target's path, or why not. */
export function parseSourceBoundPath(
  path: string,
  splitHostPort: typeof experimental.splitHostPort,
): { localAddress: string; host: string; port: number } | Error {
  const slash = path.indexOf('/');
  const hostPort = slash > 0 ? splitHostPort(path.slice(slash + 1)) : null;
  if (!hostPort || hostPort.port === undefined) return new Error(`${scheme}: target path "${path}" is not localAddress/host:port`);
  return { localAddress: path.slice(0, slash), host: hostPort.host, port: hostPort.port };
}

type ResolverConstructor = Parameters<typeof experimental.registerResolver>[1];

function resolverClass(api: typeof experimental, unavailable: number): ResolverConstructor {
  return class SourceAddressResolver implements experimental.Resolver {
    readonly #target: experimental.GrpcUri;
    readonly #listener: experimental.ResolverListener;

    constructor(target: experimental.GrpcUri, listener: experimental.ResolverListener) {
      this.#target = target;
      this.#listener = listener;
    }

    static getDefaultAuthority(target: experimental.GrpcUri): string {
      return target.path.slice(target.path.indexOf('/') + 1);
    }

    /** Set once the one answer is given: the address never changes, and answering every re-resolution request would spin with pick_first's retries. */
    #answered = false;

    updateResolution(): void {
      if (this.#answered) return;
      this.#answered = true;
      // Never synchronously: grpc-js' Resolver contract.
      process.nextTick(() => {
        if (!this.#answered) return; // destroyed meanwhile
        const parsed = parseSourceBoundPath(this.#target.path, api.splitHostPort);
        if (parsed instanceof Error) return void this.#listener(api.statusOrFromError({ code: unavailable, details: parsed.message }), {}, null, '');
        const address = { host: parsed.host, port: parsed.port, localAddress: parsed.localAddress };
        this.#listener(api.statusOrFromValue([{ addresses: [address] }]), {}, null, '');
      });
    }

    destroy(): void {
      this.#answered = false;
    }
  };
}
