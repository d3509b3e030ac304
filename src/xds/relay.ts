import { chmod, rm } from 'node:fs/promises';
import { Server, ServerCredentials, type ServiceDefinition } from '@grpc/grpc-js';
import type { Registry } from 'prom-client';
import type { Clock } from '../shared/clock.ts';
import { AgentError } from '../shared/errors.ts';
import { formatHostPort } from '../shared/host-port.ts';
import type { Logger } from '../shared/log.ts';
import { RelayStream, type Downstream } from './relay-stream.ts';
import { XdsStats, type RelayDebug } from './stats.ts';
import { dialUpstream, type UpstreamOptions } from './upstream.ts';
import type { XdsMode } from './wire.ts';

export interface XdsRelayOptions {
  /** The Unix socket Envoy connects to (`<configPath>/XDS`). */
  socketPath: string;
  upstream: UpstreamOptions;
  /** The status server's registry; the relay's metrics are registered there. */
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /** Responses waiting for Envoy before upstream reads pause (default 1: one more is held by HTTP/2 flow control upstream; Istio buffers ~2). */
  maxInFlight?: number;
}

const service = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const adsMethods: Record<XdsMode, string> = {
  sotw: `/${service}/StreamAggregatedResources`,
  delta: `/${service}/DeltaAggregatedResources`,
};

const identity = (message: Buffer) => message;

/** The ADS service with identity (de)serializers: messages stay wire bytes. */
function adsService(): ServiceDefinition {
  const method = (path: string) => ({
    path, requestStream: true, responseStream: true,
    requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
  });
  return { StreamAggregatedResources: method(adsMethods.sotw), DeltaAggregatedResources: method(adsMethods.delta) };
}

/**
 * Serves ADS to Envoy on a Unix socket and relays every stream to the
 * discovery server. Failure behaviour: when the upstream cannot be reached or
 * ends, Envoy's stream is closed with UNAVAILABLE; Envoy keeps its last
 * config and reconnects with its own backoff, which dials upstream afresh.
 */
export class XdsRelay {
  readonly #options: XdsRelayOptions;
  readonly #stats: XdsStats;
  readonly #streams = new Set<RelayStream>();
  #server: Server | undefined;
  #nextId = 1;
  #node: Buffer | undefined;

  constructor(options: XdsRelayOptions) {
    this.#options = options;
    this.#stats = new XdsStats(options.registry, options.clock);
  }

  /** Listens on the socket (owner-only); rejects when it cannot. */
  async start(): Promise<void> {
    const { socketPath } = this.#options;
    await rm(socketPath, { force: true });
    const server = new Server({
      // Envoy's requests are small; 256 MiB still ends a runaway frame early.
      'grpc.max_receive_message_length': 256 * 1024 * 1024,
      'grpc.max_send_message_length': -1,
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    });
    server.addService(adsService(), {
      StreamAggregatedResources: (call: Downstream) => this.#serve('sotw', call),
      DeltaAggregatedResources: (call: Downstream) => this.#serve('delta', call),
    });
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix:${socketPath}`, ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
    }).catch((error: unknown) => {
      throw new AgentError('BAD_FLAG', `--configPath: cannot listen on ${socketPath} (${(error as Error).message})`, { cause: error });
    });
    await chmod(socketPath, 0o600);
    this.#server = server;
    this.#options.logger.info({ socket: socketPath, upstream: formatHostPort(this.#options.upstream.address) }, 'xDS relay listening');
  }

  #serve(mode: XdsMode, downstream: Downstream): void {
    const id = this.#nextId++;
    const stream = new RelayStream({
      id,
      mode,
      downstream,
      dial: async () => {
        const { channel, call, metadata } = await dialUpstream(this.#options.upstream, adsMethods[mode]);
        return { call, metadata, close: () => channel.close() };
      },
      stats: this.#stats,
      logger: this.#options.logger.child({ stream: id }),
      node: { get: () => this.#node, set: (node) => (this.#node = node) },
      maxInFlight: this.#options.maxInFlight ?? 1,
    });
    this.#streams.add(stream);
    this.#stats.streamOpened();
    this.#options.logger.info({ stream: id, mode }, 'Envoy opened an xDS stream');
    void stream.run().then((reason) => {
      this.#streams.delete(stream);
      this.#stats.streamEnded(reason);
    });
  }

  /** Ends every stream and stops listening. */
  async stop(): Promise<void> {
    for (const stream of this.#streams) stream.stop();
    await Promise.all([...this.#streams].map((stream) => stream.done));
    this.#server?.forceShutdown();
    this.#server = undefined;
    await rm(this.#options.socketPath, { force: true });
  }

  /** JSON for the status server: per type and per stream. */
  debug(): RelayDebug {
    return {
      socket: this.#options.socketPath,
      upstream: formatHostPort(this.#options.upstream.address),
      streams: [...this.#streams].map((stream) => ({ id: stream.id, mode: stream.mode, since: stream.since.toISOString(), upstream: stream.upstreamState })),
      ...this.#stats.snapshot(),
    };
  }
}
